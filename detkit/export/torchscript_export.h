#pragma once
// A detkit model as TorchScript (Detectron2's export/torchscript.py, for detkit's C++ models):
// a torch::jit::Module whose forward is the model's inference, test-time postprocessing included,
// holding the weights under Detectron2's state-dict names. `torch.jit.load` (Python) and
// `torch::jit::load` (C++) run it once libdetkit_ops.so is loaded (ROIAlign, NMS and mask pasting
// are detkit's ops, the same kernels `detkit infer` runs); no other detkit library is needed.
//
//   forward(image: Tensor, height: int = 0, width: int = 0) -> Dict[str, Tensor]
//   image: (C, H, W) uint8 or float 0..255 in INPUT.FORMAT, already resized as the test mapper
//   does (the attributes min_size_test, max_size_test and input_format say how); height, width:
//   the original image's size, to report detections in (0: the input's). Returns pred_boxes
//   (R, 4), scores (R), pred_classes (R) and, where the model has them, pred_masks (R, height,
//   width) bool, pred_keypoints (R, K, 3) and pred_keypoint_heatmaps. A SemanticSegmentor
//   returns sem_seg (C, height, width) float logits alone; a PanopticFPN its instances, sem_seg,
//   panoptic_seg (height, width) int32 segment ids (0: void) and segments_info (S, 5) int64, a
//   row per segment: id, isthing, category_id, instance_id (a row of the instances; -1 for
//   stuff), area (pixels).
//
// What is exported: the models export_plan.h names, their inference on the CPU in float32. Not
// exported: training (losses, targets), the data pipeline (decoding, resizing), mixed precision.
#include <torch/csrc/jit/api/module.h>
#include <torch/nn/module.h>

#include <string>

#include "detkit/config/cfg_node.h"

namespace detkit::export_ {

/// The TorchScript module of `model` (built from `cfg`, weights loaded); its tensors are copies
/// on the CPU. A component without an exported form (another backbone, ROI head, box head...)
/// is a detkit::Error naming its config key, its value and what can be exported (export_plan.h).
torch::jit::Module export_torchscript(torch::nn::Module& model, const config::CfgNode& cfg);

/// Writes `module` to `path` whole (a temporary file renamed over it): a failure is a
/// detkit::Error naming the path and leaves no file behind.
void save_torchscript(torch::jit::Module& module, const std::string& path);

}  // namespace detkit::export_
