#pragma once
// KRCNNConvDeconvUpsampleHead (Detectron2's keypoint head): pooled ROI features -> conv_fcn1..N
// (3x3, ReLU) -> "score_lowres" (4x4 transposed conv, stride 2, padding 1: one heatmap per
// keypoint) -> bilinear x2. For a 14x14 pool, 56x56 heatmap logits.
// Training: cross-entropy of each visible keypoint's heatmap against its one-hot location in the
// proposal box (keypoint_rcnn_loss), normalised by the visible keypoints in the batch or by
// images x NUM_KEYPOINTS x BATCH_SIZE_PER_IMAGE x POSITIVE_FRACTION.
// Inference: heatmaps_to_keypoints -> "pred_keypoints" (R, K, 3: x, y, score; continuous
// coordinates, pixel index + 0.5) and "pred_keypoint_heatmaps" (R, K, 56, 56).
#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/layers/conv2d.h"
#include "detkit/modeling/proposal_generator/proposal_generator.h"
#include "detkit/modeling/roi_heads/poolers.h"
#include "detkit/structures/instances.h"
#include "detkit/utils/registry.h"

namespace detkit::modeling {

class KeypointHead : public torch::nn::Module {
 public:
  /// x: (R, C, S, S) pooled features for the instances of every image, in order. Training: the
  /// instances hold "proposal_boxes" and "gt_keypoints" (R, K, 3); returns {"loss_keypoint"}.
  /// Inference: the instances hold "pred_boxes" and get "pred_keypoints" and
  /// "pred_keypoint_heatmaps"; returns no losses.
  virtual LossDict forward(const at::Tensor& x, std::vector<structures::Instances>& instances) = 0;
};

struct KRCNNConvDeconvUpsampleHeadOptions {
  int64_t input_channels = 256;
  int64_t num_keypoints = 17;
  std::vector<int64_t> conv_dims = std::vector<int64_t>(8, 512);
  double loss_weight = 1.0;
  /// nullopt: normalise by the visible keypoints of the batch; else the loss is divided by
  /// images x this number (Detectron2's loss_normalizer).
  std::optional<double> loss_normalizer;
};

class KRCNNConvDeconvUpsampleHead : public KeypointHead {
 public:
  explicit KRCNNConvDeconvUpsampleHead(const KRCNNConvDeconvUpsampleHeadOptions& options);
  LossDict forward(const at::Tensor& x, std::vector<structures::Instances>& instances) override;
  /// (R, K, 4S, 4S) heatmap logits.
  at::Tensor predict_logits(const at::Tensor& x);

 private:
  KRCNNConvDeconvUpsampleHeadOptions options_;
  std::vector<layers::Conv2d> convs_;
  torch::nn::ConvTranspose2d score_lowres_{nullptr};
};

/// Detectron2's keypoints_to_heatmap: for keypoints (R, K, 3) and boxes (R, 4), each keypoint's
/// flat index y * side + x in a side x side grid over its box, and whether it is valid (visible
/// and inside the box; a keypoint on the box's right or bottom edge goes to the last cell).
std::pair<at::Tensor, at::Tensor> keypoints_to_heatmap(const at::Tensor& keypoints,
                                                       const at::Tensor& rois, int64_t side);

/// Sum of the cross-entropies of the visible keypoints' heatmaps over the batch, divided by
/// `normalizer` (nullopt: the number of visible keypoints). 0 (with a graph) when none is.
at::Tensor keypoint_rcnn_loss(const at::Tensor& pred_keypoint_logits,
                              const std::vector<structures::Instances>& instances,
                              std::optional<double> normalizer);

/// Detectron2's heatmaps_to_keypoints: maps (R, K, H, W) logits and their boxes (R, 4) ->
/// (R, K, 4): x, y, logit, score per keypoint. Each heatmap is resized (bicubic) to the box's
/// ceil'd size, its argmax taken, and the score is the softmax at the argmax normalised over the
/// H x W logits.
at::Tensor heatmaps_to_keypoints(const at::Tensor& maps, const at::Tensor& rois);

/// Sets "pred_keypoints" (x, y, score) and "pred_keypoint_heatmaps" on each image's detections.
void keypoint_rcnn_inference(const at::Tensor& pred_keypoint_logits,
                             std::vector<structures::Instances>& instances);

/// Detectron2's select_proposals_with_visible_keypoints: the proposals whose matched ground truth
/// has at least one visible keypoint inside the proposal box.
structures::Instances select_proposals_with_visible_keypoints(
    const structures::Instances& proposals);

/// The keypoint branch: in training, its loss on the foreground of the sampled `instances` that
/// see a visible keypoint; at inference, "pred_keypoints" added to the detections.
LossDict forward_keypoint_branch(KeypointHead& keypoint_head, const ROIPooler& pooler,
                                 const std::vector<at::Tensor>& features,
                                 std::vector<structures::Instances>& instances, bool training,
                                 int64_t num_classes);

using KeypointHeadFactory = std::function<std::shared_ptr<KeypointHead>(const config::CfgNode& cfg,
                                                                        int64_t input_channels)>;
Registry<KeypointHeadFactory>& keypoint_head_registry();

#define DETKIT_REGISTER_KEYPOINT_HEAD(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::keypoint_head_registry(), #name, __VA_ARGS__)

/// MODEL.ROI_KEYPOINT_HEAD.NAME.
std::shared_ptr<KeypointHead> build_keypoint_head(const config::CfgNode& cfg,
                                                  int64_t input_channels);

}  // namespace detkit::modeling
