// detkit export --config-file X --weights W --format torchscript --output DIR [--sample-image IMG]
// [KEY VALUE ...]: Detectron2's tools/deploy/export_model.py for detkit's models. Writes
// DIR/model.ts (detkit/export/torchscript_export.h says what it takes and returns). With
// --sample-image the exported module is first run on that image beside detkit's own predictor and
// the export is refused, with nothing written, when their detections differ.
#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/jit/api/module.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "detkit/data/image/image_io.h"
#include "detkit/engine/predictor.h"
#include "detkit/export/torchscript_export.h"
#include "detkit/utils/error.h"
#include "tools/commands.h"

namespace detkit::tools {
namespace {

namespace fs = std::filesystem;

double max_abs_difference(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() == 0) return 0.0;
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// Runs `module` on `image_file` as `predictor` would and compares the two sets of detections
// (same order: the same ops in the same sequence). Throws a detkit::Error when they differ.
void check_on_sample(engine::DefaultPredictor& predictor, torch::jit::Module& module,
                     const std::string& image_file) {
  const cv::Mat bgr = data::read_image(image_file, "BGR");
  const structures::Instances ours = predictor(bgr);
  const structures::ModelInput input = predictor.preprocess(bgr);
  const c10::Dict<c10::IValue, c10::IValue> exported =
      module.forward({input.image, input.height, input.width}).toGenericDict();
  auto field = [&](const char* name) { return exported.at(name).toTensor(); };
  const int64_t n = field("scores").size(0);
  if (n != ours.size()) {
    throw Error("export: on " + image_file + " the exported model finds " + std::to_string(n) +
                " detections, detkit " + std::to_string(ours.size()) + ": not written");
  }
  const double box = max_abs_difference(field("pred_boxes"), ours.boxes("pred_boxes").tensor());
  const double score = max_abs_difference(field("scores"), ours.tensor("scores"));
  const bool classes = n == 0 || field("pred_classes").equal(ours.tensor("pred_classes"));
  std::string extra;
  double mask_share = 0.0;
  if (ours.has("pred_masks")) {
    const at::Tensor differ = field("pred_masks").ne(ours.tensor("pred_masks"));
    mask_share = n == 0 ? 0.0 : differ.to(at::kDouble).mean().item<double>();
    extra += fmt::format(", mask pixels differing {:.2e}", mask_share);
  }
  double keypoint = 0.0;
  if (ours.has("pred_keypoints")) {
    keypoint = max_abs_difference(field("pred_keypoints"), ours.tensor("pred_keypoints"));
    extra += fmt::format(", keypoints {:.2e}", keypoint);
  }
  spdlog::info("export: {}: {} detections, largest difference to detkit: boxes {:.2e} px, scores "
               "{:.2e}{}",
               image_file, n, box, score, extra);
  // detkit's kernels against libtorch's convolutions: float rounding, far below these.
  if (!classes || box > 1e-2 || score > 1e-3 || mask_share > 1e-3 || keypoint > 0.1) {
    throw Error("export: on " + image_file +
                " the exported model's detections differ from detkit's (see above): not written");
  }
}

}  // namespace

CommandRunner add_export_command(CLI::App& app) {
  struct Options {
    std::string config_file, weights, format = "torchscript", output, sample_image;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a trained model as a file another runtime runs (TorchScript: model.ts)");
  cmd->add_option("--config-file", o->config_file, "Detectron2-style YAML config")->required();
  cmd->add_option("--weights", o->weights, "model weights (sets MODEL.WEIGHTS)")->required();
  cmd->add_option("--format", o->format, "torchscript (writes model.ts)");
  cmd->add_option("--output", o->output, "folder for the exported file")->required();
  cmd->add_option("--sample-image", o->sample_image,
                  "an image to run the exported model on beside detkit before writing it");
  accept_overrides(cmd, "KEY VALUE config overrides");
  cmd->footer(
      "Example: detkit export --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml "
      "--weights output/quick_shapes/model_final.pth --format torchscript --output deploy\n"
      "The model.ts needs libdetkit_ops.so loaded: torch.ops.load_library(...) in Python.\n");
  return [cmd, o]() {
    if (!*cmd) return -1;
    if (o->format != "torchscript") {
      throw Error("export: --format '" + o->format +
                  "': detkit exports 'torchscript' (model.ts); ONNX is not implemented yet");
    }
    if (!o->sample_image.empty() && !fs::is_regular_file(o->sample_image))
      throw Error("export: --sample-image '" + o->sample_image + "' is not a file");
    std::vector<std::string> overrides = overrides_of(*cmd);
    overrides.insert(overrides.end(), {"MODEL.WEIGHTS", o->weights, "MODEL.DEVICE", "cpu"});
    const config::CfgNode cfg = load_config(o->config_file, overrides);
    engine::DefaultPredictor predictor(cfg);
    torch::jit::Module module = export_::export_torchscript(predictor.model(), cfg);
    if (!o->sample_image.empty()) check_on_sample(predictor, module, o->sample_image);
    std::error_code error;
    fs::create_directories(o->output, error);
    if (error || !fs::is_directory(o->output))
      throw Error("export: cannot create the output folder '" + o->output + "'" +
                  (error ? ": " + error.message() : ""));
    const std::string path = (fs::path(o->output) / "model.ts").string();
    export_::save_torchscript(module, path);
    spdlog::info("export: wrote {} ({} MB); load libdetkit_ops.so before torch.jit.load", path,
                 fs::file_size(path) >> 20);
    return 0;
  };
}

}  // namespace detkit::tools
