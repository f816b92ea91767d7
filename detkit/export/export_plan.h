#pragma once
// What an exporter writes, read once off a built model and its config: every weight under its
// Detectron2 state-dict name, every convolution's settings, the names of the layers each stage
// runs and the config's test-time settings. TorchScript (torchscript_export.h) stores it as the
// module's attributes; ONNX (onnx_export.h) unrolls it into a graph.
//
// What has a plan: inference of GeneralizedRCNN (StandardROIHeads or CascadeROIHeads, with the
// FastRCNNConvFCHead box head, MaskRCNNConvUpsampleHead and KRCNNConvDeconvUpsampleHead),
// RetinaNet, SemanticSegmentor (SemSegFPNHead) and PanopticFPN (GeneralizedRCNN's parts with
// masks, SemSegFPNHead and the panoptic combination), on ResNet + FPN backbones.
#include <ATen/Tensor.h>

#include <array>
#include <map>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/modeling/meta_arch/meta_arch.h"

namespace detkit::export_ {

struct ConvSpec {
  int64_t stride = 1, padding = 0, dilation = 1, groups = 1;
  bool relu = false;
  std::string norm;         // "" (none), "FrozenBN", "BN" / "SyncBN" (running statistics), "GN"
  bool transposed = false;  // a ConvTranspose2d (mask / keypoint heads' upsampling)
};

struct PoolerSpec {
  int64_t resolution = 0, sampling_ratio = 0;
  bool aligned = true;  // ROIAlignV2
};

struct ExportPlan {
  std::string meta_arch;  // "GeneralizedRCNN", "RetinaNet", "SemanticSegmentor", "PanopticFPN"
  std::map<std::string, at::Tensor> weights;  // parameters and buffers, CPU float copies
  std::map<std::string, ConvSpec> convs;      // by state-dict prefix
  std::vector<double> pixel_mean, pixel_std;
  int64_t size_divisibility = 32;
  std::string input_format;
  int64_t min_size_test = 0, max_size_test = 0;
  double scale_clamp = 0;
  int64_t detections_per_image = 100;

  // ResNet + FPN
  std::string resnet_stem;  // its conv
  std::vector<std::string> resnet_stages, resnet_stage_names;  // prefixes, feature names
  std::vector<int64_t> resnet_blocks;
  std::vector<std::string> fpn_in, fpn_lateral, fpn_output, fpn_out;  // fpn_out: p2 ... p6 / p7
  bool fpn_fuse_avg = false;
  std::string fpn_top_block;  // "max_pool" or "p6p7"
  std::string fpn_top_in, fpn_top_p6 = "backbone.top_block.p6", fpn_top_p7 = "backbone.top_block.p7";

  // Anchors (the RPN's or RetinaNet's), one entry per level read
  std::vector<at::Tensor> cell_anchors;  // (A, 4)
  std::vector<int64_t> anchor_strides;
  double anchor_offset = 0;

  // RPN
  std::vector<std::string> rpn_in, rpn_convs;
  std::vector<double> rpn_weights;
  int64_t rpn_pre_topk = 0, rpn_post_topk = 0;
  double rpn_nms_thresh = 0, rpn_min_size = 0;

  // ROI heads
  std::vector<std::string> roi_in;
  std::vector<double> roi_scales;
  int64_t roi_canonical_level = 4, roi_canonical_size = 224, roi_min_level = 0, roi_max_level = 0;
  PoolerSpec box, mask, keypoint;
  std::vector<std::vector<std::string>> box_head_convs, box_head_fcs;  // per cascade stage
  std::vector<std::string> box_predictors;
  std::vector<std::vector<double>> box_reg_weights;
  int64_t num_classes = 0;
  double score_thresh = 0, nms_thresh = 0;  // ROI_HEADS' or RETINANET's
  bool mask_on = false, keypoint_on = false;
  std::vector<std::string> mask_convs, keypoint_convs;

  // RetinaNet
  std::vector<std::string> retinanet_in, retinanet_cls_convs, retinanet_bbox_convs;
  int64_t retinanet_topk_candidates = 0;
  std::vector<double> retinanet_weights;

  // SemSegFPNHead (SemanticSegmentor, PanopticFPN): per input feature, by increasing stride (the
  // order of the sum), its convs, each followed by a 2x bilinear upsampling where the feature's
  // stride is not COMMON_STRIDE; then the 1x1 predictor and a COMMON_STRIDE x upsampling.
  bool sem_seg_on = false;
  std::vector<std::string> sem_seg_in;
  std::vector<std::vector<std::string>> sem_seg_convs;
  std::vector<bool> sem_seg_upsample;
  int64_t sem_seg_common_stride = 4, sem_seg_num_classes = 0;

  // PanopticFPN's combination (MODEL.PANOPTIC_FPN.COMBINE)
  bool panoptic_on = false;
  double combine_overlap_thresh = 0.5, combine_stuff_area_limit = 4096,
         combine_instances_confidence_thresh = 0.5;
};

/// A detkit::Error naming the config key and value of a component without an exported form.
void check_exportable(const config::CfgNode& cfg);

/// The plan of `model` (built from `cfg`, weights loaded). A layer the plan does not cover is a
/// detkit::Error naming it.
ExportPlan plan_export(torch::nn::Module& model, const config::CfgNode& cfg);

}  // namespace detkit::export_
