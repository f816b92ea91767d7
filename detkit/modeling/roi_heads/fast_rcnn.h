#pragma once
// FastRCNNOutputLayers: per-ROI class scores (K + 1, background last) and box deltas, with
// Detectron2's losses (cross-entropy, or sigmoid cross-entropy over the K foreground classes,
// optionally federated (roi_heads/fed_loss.h); smooth-L1 on foreground deltas, or GIoU/DIoU/CIoU
// on their decoded boxes, / number of ROIs) and inference (softmax, or sigmoid with the sigmoid
// loss; per-class boxes, score threshold, per-class NMS, top-k). Child names: "cls_score",
// "bbox_pred"; with the federated loss, the buffer "fed_loss_cls_weights" (K), as Detectron2's.
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <string>
#include <utility>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/modeling/box_regression.h"
#include "detkit/modeling/proposal_generator/proposal_generator.h"
#include "detkit/structures/instances.h"

namespace detkit::modeling {

struct FastRCNNOutputLayersOptions {
  int64_t input_size = 1024;
  int64_t num_classes = 80;
  bool cls_agnostic_bbox_reg = false;
  std::array<double, 4> bbox_reg_weights = {10, 10, 5, 5};
  std::string box_reg_loss_type = "smooth_l1";  // or giou, diou, ciou
  double smooth_l1_beta = 0;
  double bbox_reg_loss_weight = 1.0;
  double test_score_thresh = 0.05;
  double test_nms_thresh = 0.5;
  int64_t test_topk_per_image = 100;
  bool use_sigmoid_ce = false;  // classification by K binary classifiers; sigmoid scores
  bool use_fed_loss = false;    // needs use_sigmoid_ce
  int64_t fed_loss_num_classes = 50;
  std::vector<double> fed_loss_cls_weights;  // (K) sampling weights, with use_fed_loss
};

/// MODEL.ROI_BOX_HEAD.USE_FED_LOSS reads the weights (class_image_count **
/// FED_LOSS_FREQ_WEIGHT_POWER) of DATASETS.TRAIN's metadata (detkit/utils/class_frequency.h).
FastRCNNOutputLayersOptions fast_rcnn_options_from_config(const config::CfgNode& cfg,
                                                          int64_t input_size);

class FastRCNNOutputLayersImpl : public torch::nn::Module {
 public:
  explicit FastRCNNOutputLayersImpl(const FastRCNNOutputLayersOptions& options);
  /// x: (R, input_size) -> scores (R, K + 1), deltas (R, 4 or 4K).
  std::pair<at::Tensor, at::Tensor> forward(const at::Tensor& x);
  /// proposals: per image, "proposal_boxes", "gt_classes" and (for foreground) "gt_boxes".
  LossDict losses(const std::pair<at::Tensor, at::Tensor>& predictions,
                  const std::vector<structures::Instances>& proposals) const;
  /// Per image, its proposals regressed: (Ri, 4) class-agnostic or (Ri, 4K).
  std::vector<at::Tensor> predict_boxes(const std::pair<at::Tensor, at::Tensor>& predictions,
                                        const std::vector<structures::Instances>& proposals) const;
  /// Per image, the class probabilities (Ri, K + 1): softmax, or each logit's sigmoid with
  /// use_sigmoid_ce.
  std::vector<at::Tensor> predict_probs(const std::pair<at::Tensor, at::Tensor>& predictions,
                                        const std::vector<structures::Instances>& proposals) const;
  /// Detections per image: "pred_boxes", "scores", "pred_classes", in the proposals' image size.
  std::vector<structures::Instances> inference(
      const std::pair<at::Tensor, at::Tensor>& predictions,
      const std::vector<structures::Instances>& proposals) const;
  const FastRCNNOutputLayersOptions& options() const { return options_; }

 private:
  FastRCNNOutputLayersOptions options_;
  torch::nn::Linear cls_score_{nullptr}, bbox_pred_{nullptr};
  at::Tensor fed_loss_cls_weights_;  // (K), with use_fed_loss
  Box2BoxTransform box2box_;
  /// The classification loss of logits (R, K + 1) for gt_classes (R).
  at::Tensor classification_loss(const at::Tensor& logits, const at::Tensor& gt_classes) const;
};
TORCH_MODULE(FastRCNNOutputLayers);

/// One image's detections from per-class boxes (R, 4K or 4) and probabilities (R, K + 1).
structures::Instances fast_rcnn_inference_single_image(at::Tensor boxes, at::Tensor scores,
                                                       int64_t image_height, int64_t image_width,
                                                       double score_thresh, double nms_thresh,
                                                       int64_t topk_per_image);

}  // namespace detkit::modeling
