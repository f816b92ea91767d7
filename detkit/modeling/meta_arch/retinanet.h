#pragma once
// RetinaNet (Lin et al.), as Detectron2's meta_arch/retinanet.py: a dense detector over P3-P7.
// Anchors are matched to ground truth at IoU 0.4 / 0.5 (allowing low-quality matches); the loss
// is sigmoid focal loss over all non-ignored anchors plus smooth-L1 (or GIoU) box regression
// over the foreground ones, both divided by a moving average of the foreground count. At test
// time each level keeps its scores above SCORE_THRESH_TEST, at most TOPK_CANDIDATES_TEST of
// them, then per-class NMS over the levels and DETECTIONS_PER_IMAGE detections. Child names:
// backbone, head, anchor_generator — Detectron2's state-dict names.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "detkit/modeling/anchor_generator.h"
#include "detkit/modeling/backbone/backbone.h"
#include "detkit/modeling/box_regression.h"
#include "detkit/modeling/matcher.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/modeling/meta_arch/retinanet_head.h"
#include "detkit/structures/image_list.h"

namespace detkit::modeling {

struct RetinaNetOptions {
  std::vector<std::string> in_features{"p3", "p4", "p5", "p6", "p7"};
  int64_t num_classes = 80;
  std::vector<double> iou_thresholds{0.4, 0.5};
  std::vector<int64_t> iou_labels{0, -1, 1};
  std::array<double, 4> bbox_reg_weights{1.0, 1.0, 1.0, 1.0};
  double focal_loss_alpha = 0.25, focal_loss_gamma = 2.0;
  std::string box_reg_loss_type = "smooth_l1";  // or giou, diou, ciou
  double smooth_l1_beta = 0.1;
  double score_thresh_test = 0.05;
  int64_t topk_candidates_test = 1000;
  double nms_thresh_test = 0.5;
  int64_t detections_per_image = 100;
};

/// MODEL.RETINANET.*, TEST.DETECTIONS_PER_IMAGE; unsupported values name their key.
RetinaNetOptions retinanet_options_from_config(const config::CfgNode& cfg);

/// Per level, predictions laid out like the anchors: logits (N, Hi*Wi*A, K), deltas
/// (N, Hi*Wi*A, 4).
struct DensePredictions {
  std::vector<at::Tensor> logits, deltas;
};

class RetinaNet : public MetaArch {
 public:
  RetinaNet(std::shared_ptr<Backbone> backbone, RetinaNetHead head,
            std::shared_ptr<AnchorGenerator> anchor_generator, RetinaNetOptions options,
            std::vector<double> pixel_mean, std::vector<double> pixel_std);

  /// "loss_cls", "loss_box_reg"; updates loss_normalizer() first.
  structures::LossDict losses(const std::vector<structures::ModelInput>& batch) override;
  std::vector<structures::Instances> inference(
      const std::vector<structures::ModelInput>& batch) override;
  void to(torch::Device device, bool non_blocking = false) override;
  using MetaArch::to;

  structures::ImageList preprocess_image(const std::vector<structures::ModelInput>& batch) const;
  /// The head's outputs on the backbone's in_features, transposed like the anchors.
  DensePredictions predict(const std::vector<at::Tensor>& features);
  /// The backbone's maps named by in_features, in order.
  std::vector<at::Tensor> head_features(const structures::FeatureMap& features) const;

  /// Per image (R) int64 labels (class, num_classes for background, -1 ignored) and the (R, 4)
  /// matched ground-truth boxes, over all levels' anchors concatenated.
  std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> label_anchors(
      const structures::Boxes& anchors, const std::vector<structures::Instances>& targets) const;
  /// The losses for labelled anchors; divides by the updated moving average of foreground.
  structures::LossDict dense_losses(const structures::Boxes& anchors,
                                    const DensePredictions& predictions,
                                    const std::vector<at::Tensor>& gt_labels,
                                    const std::vector<at::Tensor>& gt_boxes);
  /// One image's detections in the network's input frame (not clipped): pred_boxes, scores,
  /// pred_classes.
  structures::Instances inference_single_image(const std::vector<structures::Boxes>& anchors,
                                               const DensePredictions& predictions, int64_t image,
                                               std::pair<int64_t, int64_t> image_size) const;

  /// Detectron2's EMA of foreground anchors per step (momentum 0.9), 100 before the first step.
  double loss_normalizer() const { return loss_normalizer_; }
  const RetinaNetOptions& options() const { return options_; }
  const std::shared_ptr<Backbone>& backbone() const { return backbone_; }
  const std::shared_ptr<AnchorGenerator>& anchor_generator() const { return anchor_generator_; }

 private:
  std::shared_ptr<Backbone> backbone_;
  RetinaNetHead head_;
  std::shared_ptr<AnchorGenerator> anchor_generator_;
  RetinaNetOptions options_;
  Matcher matcher_;
  Box2BoxTransform box2box_;
  at::Tensor pixel_mean_, pixel_std_;  // (C, 1, 1); not in the state dict
  double loss_normalizer_ = 100.0;
};

/// RetinaNet from the config (registered as MODEL.META_ARCHITECTURE "RetinaNet").
std::shared_ptr<RetinaNet> build_retinanet(const config::CfgNode& cfg);

}  // namespace detkit::modeling
