// detkit convert-weights IN OUT.pth [--config-file X] [KEY VALUE ...]: any weights MODEL.WEIGHTS
// reads (a path or a detectron2:// URL; .pth, model-zoo or Caffe2 .pkl) written as a .pth that
// Python's torch.load reads. With a config: loaded exactly as training loads it (names converted,
// matching heuristics applied to the model X builds; the load report on stderr) and written as
// the model's state dict, in PyTorch's order — what was loaded from IN, the rest as initialised.
// Without one: IN's tensors under Detectron2's names (Caffe2 names converted), nothing matched.
#include <spdlog/spdlog.h>

#include <memory>

#include "detkit/checkpoint/caffe2_names.h"
#include "detkit/checkpoint/checkpointer.h"
#include "detkit/checkpoint/model_zoo.h"
#include "detkit/checkpoint/torch_file.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "tools/commands.h"

namespace detkit::tools {
namespace {

c10::Dict<std::string, at::Tensor> converted_without_model(const std::string& in) {
  const checkpoint::WeightsFile file = checkpoint::fetch_weights(in);
  const checkpoint::TensorDict weights =
      file.caffe2_names() ? checkpoint::convert_caffe2_detectron_names(file.model).weights
                          : file.model;
  c10::Dict<std::string, at::Tensor> out;
  for (const auto& [name, tensor] : weights) out.insert(name, tensor);
  return out;
}

c10::Dict<std::string, at::Tensor> converted_for_model(const std::string& in,
                                                       const config::CfgNode& cfg) {
  auto model = modeling::build_model(cfg);
  checkpoint::Checkpointer(model, "", /*save_to_disk=*/false).load(in, /*with_state=*/false);
  c10::Dict<std::string, at::Tensor> out;
  for (const auto& [name, tensor] : checkpoint::ordered_state_dict(*model))
    out.insert(name, tensor);
  return out;
}

}  // namespace

CommandRunner add_convert_weights_command(CLI::App& app) {
  struct Options {
    std::string in, out, config_file;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "convert-weights",
      "Write weights (.pth, Detectron2 model-zoo or Caffe2 .pkl, detectron2:// URL) as a .pth");
  cmd->add_option("in", o->in, "weights file or URL, as MODEL.WEIGHTS takes")->required();
  cmd->add_option("out", o->out, "the .pth to write ({name: tensor}, torch.load reads it)")
      ->required();
  cmd->add_option("--config-file", o->config_file,
                  "load IN into the model this config builds, as training would");
  accept_overrides(cmd, "KEY VALUE config overrides, e.g. MODEL.ROI_HEADS.NUM_CLASSES 3");
  cmd->footer(
      "Examples:\n"
      "  detkit convert-weights detectron2://ImageNetPretrained/MSRA/R-50.pkl R-50.pth\n"
      "  detkit convert-weights model_final_f10217.pkl model.pth --config-file "
      "configs/COCO-InstanceSegmentation/mask_rcnn_R_50_FPN_3x.yaml\n");
  return [cmd, o]() {
    if (!*cmd) return -1;
    const std::vector<std::string> overrides = overrides_of(*cmd);
    if (o->config_file.empty() && !overrides.empty())
      throw Error("detkit convert-weights: config overrides need --config-file");
    const auto tensors = o->config_file.empty()
                             ? converted_without_model(o->in)
                             : converted_for_model(o->in, load_config(o->config_file, overrides));
    checkpoint::save_torch_file(o->out, tensors);
    spdlog::info("Wrote {} tensors to {}", tensors.size(), o->out);
    return 0;
  };
}

}  // namespace detkit::tools
