#pragma once
// A detkit model as an ONNX model (opset 17, standard operators only: no custom domain), for ONNX
// Runtime or any other ONNX runtime. The graph unrolls the model's export plan (export_plan.h):
// ResNet + FPN, RPN (anchors from the maps' sizes, per-level top-k, NonMaxSuppression per level),
// ROI heads (RoiAlign per FPN level, scattered back into box order; Cascade R-CNN's stages),
// RetinaNet's dense head, Mask R-CNN's masks pasted into the image, Keypoint R-CNN's keypoints,
// SemSegFPNHead's logits (SemanticSegmentor, PanopticFPN) and PanopticFPN's combination (a Loop
// over the instances, the stuff classes unrolled). Image sizes and detection counts are dynamic.
//
//   inputs:  image          uint8 (3, H, W), INPUT.FORMAT order, resized as the test mapper does
//                           (the metadata_props min_size_test / max_size_test / input_format say
//                           how)
//            original_size  int64 (2): the height and width to report detections in
//   outputs: pred_boxes (R, 4) float XYXY, scores (R) float, pred_classes (R) int64; mask models
//            pred_masks (R, height, width) bool; keypoint models pred_keypoints (R, K, 3) float.
//            SemanticSegmentor: sem_seg (C, height, width) float logits alone. PanopticFPN: the
//            instances, sem_seg, panoptic_seg (height, width) int32 and segments_info (S, 5)
//            int64 (id, isthing, category_id, instance_id, area), as torchscript_export.h.
//
// Where ONNX's operators and detkit's kernels round differently (NonMaxSuppression's IoU,
// RoiAlign's sums, the separable mask paste), the detections agree to float rounding; the tests
// compare them with `detkit infer`'s.
#include <torch/nn/module.h>

#include <string>

#include "detkit/config/cfg_node.h"

namespace detkit::export_ {

/// The serialized ONNX model of `model` (built from `cfg`, weights loaded). A component without
/// an exported form is a detkit::Error naming its config key (export_plan.h).
std::string export_onnx(torch::nn::Module& model, const config::CfgNode& cfg);

}  // namespace detkit::export_
