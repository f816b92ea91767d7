// detkit analyze-model --config-file X.yaml [--tasks parameter,state-dict,flop] [KEY VALUE ...]:
// what the configured model holds and costs, as Detectron2's tools/analyze_model.py.
//   parameter:  parameters per module (total and trainable) down to --max-depth, and totals;
//   state-dict: one line per state-dict entry, "name (d0, d1, ...)", in registration order;
//   flop:       conv, transposed conv and linear FLOPs (fvcore's convention, one multiply-add
//               = one flop) of one inference pass on a random image of --input-size, with the
//               model's random initial weights (MODEL.WEIGHTS is not loaded).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <iomanip>
#include <iostream>
#include <memory>
#include <regex>
#include <sstream>

#include "detkit/config/defaults.h"
#include "detkit/analysis/flop_count.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/analysis/model_analysis.h"
#include "detkit/utils/error.h"
#include "tools/commands.h"

namespace detkit::tools {
namespace {

using modeling::MetaArch;

std::string gflops(int64_t flops) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3) << double(flops) / 1e9 << " G";
  return out.str();
}

void print_parameters(const MetaArch& model, int64_t max_depth) {
  auto rows = analysis::count_parameters(model, max_depth);
  std::cout << analysis::format_module_table(rows, {"#parameters", "trainable"});
  std::cout << "total parameters: " << analysis::with_thousands_separators(rows[0].values[0])
            << "\ntrainable parameters: " << analysis::with_thousands_separators(rows[0].values[1])
            << "\n";
}

void print_state_dict(const MetaArch& model) {
  for (const auto& [name, tensor] : analysis::ordered_state_dict(model))
    std::cout << name << " " << analysis::shape_string(tensor) << "\n";
}

// "800x1333" -> {800, 1333} (height, width).
std::pair<int64_t, int64_t> parse_input_size(const std::string& text) {
  static const std::regex kSize(R"(\s*([0-9]{1,5})\s*[xX]\s*([0-9]{1,5})\s*)");
  std::smatch match;
  if (!std::regex_match(text, match, kSize) || std::stoll(match[1]) < 1 || std::stoll(match[2]) < 1)
    throw Error("analyze-model: --input-size must be HEIGHTxWIDTH in pixels, e.g. 800x1333; got '" +
                text + "'");
  return {std::stoll(match[1]), std::stoll(match[2])};
}

void print_flops(MetaArch& model, const config::CfgNode& cfg, const std::string& size,
                 int64_t max_depth) {
  auto [height, width] = size.empty() ? std::make_pair(cfg.get_int("INPUT.MIN_SIZE_TEST"),
                                                       cfg.get_int("INPUT.MAX_SIZE_TEST"))
                                      : parse_input_size(size);
  model.eval();
  at::NoGradGuard no_grad;
  structures::ModelInput input;
  auto generator = at::detail::createCPUGenerator(/*seed_val=*/0);
  input.image =
      at::rand({int64_t(cfg.get_float_list("MODEL.PIXEL_MEAN").size()), height, width}, generator) *
      255;
  input.height = height;
  input.width = width;
  analysis::FlopCounter counter(model);
  auto results = model.inference({input});
  std::cout << "one inference pass on a random " << height << "x" << width << " image ("
            << results[0].size() << " detections; a mask head's cost grows with them)\n";
  if (results[0].size() == 0)
    std::cout << "note: no detections, so the ROI heads' cost is partial. The weights are random "
                 "(MODEL.WEIGHTS is not loaded); a random FrozenBN backbone gives degenerate "
                 "proposals: try MODEL.RESNETS.NORM GN MODEL.ROI_HEADS.SCORE_THRESH_TEST 0.0\n";
  std::vector<analysis::ModuleRow> rows = counter.rows(model, max_depth);
  std::cout << analysis::format_module_table(rows, {"flops"});
  for (const auto& [kind, flops] : counter.by_operator())
    std::cout << kind << ": " << analysis::with_thousands_separators(flops) << " (" << gflops(flops)
              << ")\n";
  std::cout << "total flops: " << analysis::with_thousands_separators(counter.total()) << " ("
            << gflops(counter.total()) << ")\n";
}

}  // namespace

CommandRunner add_analyze_model_command(CLI::App& app) {
  struct Options {
    std::string config_file;
    std::vector<std::string> tasks = {"parameter"};
    int64_t max_depth = 3;
    std::string input_size;
    std::vector<std::string> overrides;
  };
  auto options = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "analyze-model", "Print the model's parameters per module, its state dict, or its FLOPs");
  cmd->add_option("--config-file", options->config_file, "Detectron2-style YAML config file")
      ->required();
  cmd->add_option("--tasks", options->tasks, "parameter, state-dict, flop (comma-separated)")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::IsMember({"parameter", "state-dict", "flop"}))
      ->capture_default_str();
  cmd->add_option("--max-depth", options->max_depth, "Module depth of the tables")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--input-size", options->input_size,
                  "HEIGHTxWIDTH of the image for flop (default: INPUT.MIN_SIZE_TEST x "
                  "INPUT.MAX_SIZE_TEST)");
  accept_overrides(cmd, "KEY VALUE pairs, e.g. MODEL.MASK_ON False");
  cmd->footer(
      "Example: detkit analyze-model --config-file "
      "configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_1x.yaml --tasks parameter,flop\n");
  return [cmd, options]() {
    if (!*cmd) return -1;
    options->overrides = overrides_of(*cmd);
    const config::CfgNode cfg = load_config(options->config_file, options->overrides);
    auto model = modeling::build_model(cfg);
    for (const auto& task : options->tasks) {
      if (task == "parameter") print_parameters(*model, options->max_depth);
      if (task == "state-dict") print_state_dict(*model);
      if (task == "flop") print_flops(*model, cfg, options->input_size, options->max_depth);
    }
    return 0;
  };
}

}  // namespace detkit::tools
