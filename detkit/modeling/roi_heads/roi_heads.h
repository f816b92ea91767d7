#pragma once
// ROI heads: proposals + features -> detections (and masks, keypoints); in training, proposals
// are matched to ground truth (GT appended first), sampled, and the heads' losses returned. Built
// by MODEL.ROI_HEADS.NAME; StandardROIHeads is Detectron2's FPN design (separate box, mask and
// keypoint poolers on p2..p5). Child names: box_head, box_predictor, mask_head, keypoint_head.
#include <memory>
#include <optional>
#include <vector>

#include "detkit/modeling/backbone/backbone.h"
#include "detkit/modeling/matcher.h"
#include "detkit/modeling/proposal_generator/proposal_generator.h"
#include "detkit/modeling/roi_heads/box_head.h"
#include "detkit/modeling/roi_heads/fast_rcnn.h"
#include "detkit/modeling/roi_heads/keypoint_head.h"
#include "detkit/modeling/roi_heads/mask_head.h"
#include "detkit/modeling/roi_heads/poolers.h"

namespace detkit::modeling {

struct ROIHeadsOutput {
  std::vector<structures::Instances> instances;  // inference: detections per image
  LossDict losses;                               // training
};

class ROIHeads : public torch::nn::Module {
 public:
  /// targets: per image "gt_boxes", "gt_classes" (and "gt_masks" with masks, "gt_keypoints"
  /// (N, K, 3) with keypoints); training only.
  virtual ROIHeadsOutput forward(const structures::ImageList& images, const FeatureMap& features,
                                 std::vector<structures::Instances> proposals,
                                 const std::vector<structures::Instances>* targets) = 0;
};

struct StandardROIHeadsOptions {
  int64_t num_classes = 80;
  int64_t batch_size_per_image = 512;
  double positive_fraction = 0.25;
  std::vector<double> iou_thresholds = {0.5};
  std::vector<int64_t> iou_labels = {0, 1};
  bool proposal_append_gt = true;
  std::vector<std::string> in_features;
  bool mask_on = false;
  bool keypoint_on = false;
};

/// An optional head and its pooler: the keypoint branch (the mask branch still comes as two
/// arguments).
template <typename Head>
struct ROIBranch {
  std::optional<ROIPooler> pooler;
  std::shared_ptr<Head> head;
};

class StandardROIHeads : public ROIHeads {
 public:
  StandardROIHeads(const StandardROIHeadsOptions& options, ROIPooler box_pooler,
                   std::shared_ptr<BoxHead> box_head, FastRCNNOutputLayers box_predictor,
                   std::optional<ROIPooler> mask_pooler, std::shared_ptr<MaskHead> mask_head,
                   ROIBranch<KeypointHead> keypoint = {});
  ROIHeadsOutput forward(const structures::ImageList& images, const FeatureMap& features,
                         std::vector<structures::Instances> proposals,
                         const std::vector<structures::Instances>* targets) override;

  /// label_and_sample_proposals with this head's matcher and options.
  std::vector<structures::Instances> label_and_sample_proposals(
      std::vector<structures::Instances> proposals,
      const std::vector<structures::Instances>& targets) const;

 private:
  std::vector<at::Tensor> select(const FeatureMap& features) const;
  LossDict forward_box_losses(const FeatureMap& features,
                              const std::vector<structures::Instances>& proposals);
  std::vector<structures::Instances> forward_box_inference(
      const FeatureMap& features, const std::vector<structures::Instances>& proposals);
  LossDict forward_mask(const FeatureMap& features, std::vector<structures::Instances>& instances);
  LossDict forward_keypoint(const FeatureMap& features,
                            std::vector<structures::Instances>& instances);

  StandardROIHeadsOptions options_;
  Matcher matcher_;
  ROIPooler box_pooler_;
  std::shared_ptr<BoxHead> box_head_;
  FastRCNNOutputLayers box_predictor_;
  std::optional<ROIPooler> mask_pooler_;
  std::shared_ptr<MaskHead> mask_head_;
  std::optional<ROIPooler> keypoint_pooler_;
  std::shared_ptr<KeypointHead> keypoint_head_;
};

/// MODEL.ROI_HEADS.*, MODEL.MASK_ON and MODEL.KEYPOINT_ON as the options StandardROIHeads and
/// CascadeROIHeads share.
StandardROIHeadsOptions standard_roi_heads_options_from_config(const config::CfgNode& cfg);

/// The keypoint branch of MODEL.ROI_KEYPOINT_HEAD.* on the ROI heads' feature levels; empty
/// unless `options.keypoint_on`.
ROIBranch<KeypointHead> keypoint_branch_from_config(const config::CfgNode& cfg,
                                                    const StandardROIHeadsOptions& options,
                                                    const FeatureLevels& levels);

/// The maps of `features` named by `names` (MODEL.ROI_HEADS.IN_FEATURES), in order.
std::vector<at::Tensor> select_features(const FeatureMap& features,
                                        const std::vector<std::string>& names);

/// Detectron2's label_and_sample_proposals: ground truth appended to the proposals (when
/// options say so), matched with `matcher`, sampled; proposals gain "gt_classes" (K for
/// background, -1 ignored) and, where the image has ground truth, the matched "gt_*" fields.
std::vector<structures::Instances> label_and_sample_proposals(
    std::vector<structures::Instances> proposals, const std::vector<structures::Instances>& targets,
    const Matcher& matcher, const StandardROIHeadsOptions& options);

/// Detectron2's select_foreground_proposals: per image, the sampled proposals whose gt_classes is
/// a class (neither background, num_classes, nor ignored, -1).
std::vector<structures::Instances> select_foreground_proposals(
    const std::vector<structures::Instances>& proposals, int64_t num_classes);

/// The mask branch: in training, its loss on the foreground of the sampled `instances` (their
/// "proposal_boxes"); at inference, "pred_masks" added to the detections (their "pred_boxes").
LossDict forward_mask_branch(MaskHead& mask_head, const ROIPooler& pooler,
                             const std::vector<at::Tensor>& features,
                             std::vector<structures::Instances>& instances, bool training,
                             int64_t num_classes);

using ROIHeadsFactory = std::function<std::shared_ptr<ROIHeads>(
    const config::CfgNode& cfg, const layers::ShapeSpecs& input_shapes)>;
Registry<ROIHeadsFactory>& roi_heads_registry();

#define DETKIT_REGISTER_ROI_HEADS(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::roi_heads_registry(), #name, __VA_ARGS__)

std::shared_ptr<ROIHeads> build_roi_heads(const config::CfgNode& cfg,
                                          const layers::ShapeSpecs& input_shapes);

}  // namespace detkit::modeling
