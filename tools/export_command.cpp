// detkit export --config-file X --weights W --format torchscript|onnx --output DIR
// [--sample-image IMG] [KEY VALUE ...]: Detectron2's tools/deploy/export_model.py for detkit's
// models. Writes DIR/model.ts or DIR/model.onnx (detkit/export/torchscript_export.h and
// onnx_export.h say what they take and return). With --sample-image a TorchScript export is
// first run on that image beside detkit's own predictor and refused, with nothing written, when
// their detections (semantic logits, panoptic id maps) differ.
#include <ATen/ATen.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/jit/api/module.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "detkit/data/image/image_io.h"
#include "detkit/engine/predictor.h"
#include "detkit/export/export_plan.h"
#include "detkit/export/onnx_export.h"
#include "detkit/export/torchscript_export.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "tools/commands.h"

namespace detkit::tools {
namespace {

namespace fs = std::filesystem;

// Per detkit detection, the exported model's detection of the same class whose box is nearest
// (largest coordinate difference), each used once: near-equal scores may swap ranks between the
// two, with nothing wrong. -1 where none is left.
std::vector<int64_t> pair_up(const at::Tensor& ours_boxes, const at::Tensor& ours_classes,
                             const at::Tensor& boxes, const at::Tensor& classes) {
  const auto ob = ours_boxes.to(at::kDouble).contiguous(), eb = boxes.to(at::kDouble).contiguous();
  const auto oc = ours_classes.to(at::kLong).contiguous(), ec = classes.to(at::kLong).contiguous();
  const auto o = ob.accessor<double, 2>(), e = eb.accessor<double, 2>();
  const auto ocl = oc.accessor<int64_t, 1>(), ecl = ec.accessor<int64_t, 1>();
  std::vector<int64_t> partner(o.size(0), -1);
  std::vector<bool> taken(e.size(0), false);
  for (int64_t i = 0; i < o.size(0); ++i) {
    double best = 0;
    for (int64_t j = 0; j < e.size(0); ++j) {
      if (taken[j] || ecl[j] != ocl[i]) continue;
      double d = 0;
      for (int k = 0; k < 4; ++k) d = std::max(d, std::abs(o[i][k] - e[j][k]));
      if (partner[i] < 0 || d < best) partner[i] = j, best = d;
    }
    if (partner[i] >= 0) taken[partner[i]] = true;
  }
  return partner;
}

// The largest difference of the exported model's semantic logits to detkit's, and the pixels
// of its panoptic id map that differ from detkit's (0 without one).
std::pair<double, int64_t> check_segmentation(const structures::ModelOutput& ours,
                                              const c10::Dict<c10::IValue, c10::IValue>& exported,
                                              const std::string& image_file) {
  double logits = 0;
  int64_t pixels = 0;
  if (ours.sem_seg) {
    const at::Tensor theirs = exported.at("sem_seg").toTensor();
    if (theirs.sizes() != ours.sem_seg->sizes())
      throw Error("export: on " + image_file +
                  " the exported model's sem_seg has another shape "
                  "than detkit's: not written");
    logits = (theirs - *ours.sem_seg).abs().max().item<double>();
  }
  if (ours.panoptic_seg) {
    const at::Tensor ids = exported.at("panoptic_seg").toTensor();
    const int64_t segments = exported.at("segments_info").toTensor().size(0);
    if (ids.sizes() != ours.panoptic_seg->ids.sizes() ||
        segments != static_cast<int64_t>(ours.panoptic_seg->segments.size()))
      throw Error("export: on " + image_file + " the exported model finds " +
                  std::to_string(segments) + " panoptic segments, detkit " +
                  std::to_string(ours.panoptic_seg->segments.size()) + ": not written");
    pixels = ids.ne(ours.panoptic_seg->ids).sum().item<int64_t>();
  }
  return {logits, pixels};
}

// Runs `module` on `image_file` as `predictor` would and compares the two models' outputs:
// detections, semantic logits, panoptic id maps. Throws a detkit::Error when they differ beyond
// float rounding (detkit's kernels against libtorch's convolutions).
void check_on_sample(engine::DefaultPredictor& predictor, torch::jit::Module& module,
                     const std::string& image_file) {
  const cv::Mat bgr = data::read_image(image_file, "BGR");
  const structures::ModelOutput outputs = predictor.outputs(bgr);
  const structures::ModelInput input = predictor.preprocess(bgr);
  const c10::Dict<c10::IValue, c10::IValue> exported =
      module.forward({input.image, input.height, input.width}).toGenericDict();
  const auto [logits, panoptic_pixels] = check_segmentation(outputs, exported, image_file);
  std::string segmentation;
  if (outputs.sem_seg) segmentation += fmt::format(", sem_seg logits {:.2e}", logits);
  if (outputs.panoptic_seg) segmentation += fmt::format(", panoptic pixels {}", panoptic_pixels);
  const bool segmentation_differs = logits > 1e-2 || panoptic_pixels > 0.001 * bgr.rows * bgr.cols;
  if (!outputs.instances) {
    spdlog::info("export: {}: largest difference to detkit{}", image_file, segmentation);
    if (segmentation_differs)
      throw Error(
          "export: on " + image_file +
          " the exported model's segmentation differs from detkit's (see above): not written");
    return;
  }
  const structures::Instances& ours = *outputs.instances;
  auto field = [&](const char* name) { return exported.at(name).toTensor(); };
  const int64_t n = field("scores").size(0);
  if (n != ours.size()) {
    throw Error("export: on " + image_file + " the exported model finds " + std::to_string(n) +
                " detections, detkit " + std::to_string(ours.size()) + ": not written");
  }
  const std::vector<int64_t> partner =
      pair_up(ours.boxes("pred_boxes").tensor(), ours.tensor("pred_classes"), field("pred_boxes"),
              field("pred_classes"));
  if (std::count(partner.begin(), partner.end(), -1) > 0)
    throw Error("export: on " + image_file + " the exported model's classes differ from detkit's");
  const at::Tensor index = at::tensor(partner, at::kLong);
  auto difference = [&](const char* name, const at::Tensor& reference) {
    if (n == 0) return 0.0;
    const at::Tensor a = field(name).index_select(0, index).to(at::kDouble);
    return (a - reference.to(at::kDouble)).abs().max().item<double>();
  };
  const double box = difference("pred_boxes", ours.boxes("pred_boxes").tensor());
  const double score = difference("scores", ours.tensor("scores"));
  std::string extra;
  int64_t mask_pixels = 0;
  if (ours.has("pred_masks") && n > 0) {
    const at::Tensor differ =
        field("pred_masks").index_select(0, index).ne(ours.tensor("pred_masks"));
    mask_pixels = differ.flatten(1).sum(1).max().item<int64_t>();
    extra += fmt::format(", mask pixels {}", mask_pixels);
  }
  double keypoint = 0.0;
  if (ours.has("pred_keypoints")) {
    keypoint = difference("pred_keypoints", ours.tensor("pred_keypoints"));
    extra += fmt::format(", keypoints {:.2e}", keypoint);
  }
  spdlog::info(
      "export: {}: {} detections, largest difference to detkit: boxes {:.2e} px, scores "
      "{:.2e}{}{}",
      image_file, n, box, score, extra, segmentation);
  if (box > 1e-2 || score > 1e-3 || mask_pixels > 0.001 * bgr.rows * bgr.cols || keypoint > 0.1 ||
      segmentation_differs) {
    throw Error("export: on " + image_file +
                " the exported model's outputs differ from detkit's (see above): not written");
  }
}

}  // namespace

CommandRunner add_export_command(CLI::App& app) {
  struct Options {
    std::string config_file, weights, format = "torchscript", output, sample_image;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a trained model as a file another runtime runs (TorchScript, ONNX)");
  cmd->add_option("--config-file", o->config_file, "Detectron2-style YAML config")->required();
  cmd->add_option("--weights", o->weights, "model weights (sets MODEL.WEIGHTS)")->required();
  cmd->add_option("--format", o->format, "torchscript (writes model.ts) or onnx (model.onnx)");
  cmd->add_option("--output", o->output, "folder for the exported file")->required();
  cmd->add_option("--sample-image", o->sample_image,
                  "an image to run the exported model on beside detkit before writing it");
  accept_overrides(cmd, "KEY VALUE config overrides");
  cmd->footer(
      "Example: detkit export --config-file configs/quick/mask_rcnn_R_18_FPN_shapes.yaml "
      "--weights output/quick_shapes/model_final.pth --format torchscript --output deploy\n"
      "The model.ts needs libdetkit_ops.so loaded: torch.ops.load_library(...) in Python; "
      "model.onnx needs only an ONNX runtime (opset 17).\n");
  return [cmd, o]() {
    if (!*cmd) return -1;
    if (o->format != "torchscript" && o->format != "onnx") {
      throw Error("export: --format '" + o->format +
                  "': detkit exports 'torchscript' (model.ts) or 'onnx' (model.onnx)");
    }
    const bool onnx = o->format == "onnx";
    if (!o->sample_image.empty() && onnx) {
      throw Error("export: --sample-image runs the TorchScript export beside detkit; an ONNX "
                  "model runs in an ONNX runtime (README: Deploy)");
    }
    if (!o->sample_image.empty() && !fs::is_regular_file(o->sample_image))
      throw Error("export: --sample-image '" + o->sample_image + "' is not a file");
    std::vector<std::string> overrides = overrides_of(*cmd);
    // The files run float32 on the CPU: so does the predictor their --sample-image check uses.
    overrides.insert(overrides.end(), {"MODEL.WEIGHTS", o->weights, "MODEL.DEVICE", "cpu",
                                       "SOLVER.AMP.ENABLED", "False"});
    const config::CfgNode cfg = load_config(o->config_file, overrides);
    export_::check_exportable(cfg);  // before loading weights
    engine::DefaultPredictor predictor(cfg);
    std::string onnx_bytes;
    torch::jit::Module module;
    if (onnx) {
      onnx_bytes = export_::export_onnx(predictor.model(), cfg);
    } else {
      module = export_::export_torchscript(predictor.model(), cfg);
      if (!o->sample_image.empty()) check_on_sample(predictor, module, o->sample_image);
    }
    std::error_code error;
    fs::create_directories(o->output, error);
    if (error || !fs::is_directory(o->output))
      throw Error("export: cannot create the output folder '" + o->output + "'" +
                  (error ? ": " + error.message() : ""));
    const std::string path = (fs::path(o->output) / (onnx ? "model.onnx" : "model.ts")).string();
    if (onnx)
      atomic_write(path, onnx_bytes);
    else
      export_::save_torchscript(module, path);
    spdlog::info("export: wrote {} ({} MB){}", path, fs::file_size(path) >> 20,
                 onnx ? "" : "; load libdetkit_ops.so before torch.jit.load");
    return 0;
  };
}

}  // namespace detkit::tools
