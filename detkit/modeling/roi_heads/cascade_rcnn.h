#pragma once
// CascadeROIHeads (Cai and Vasconcelos), as Detectron2's: three box stages with rising IoU
// thresholds (MODEL.ROI_BOX_CASCADE_HEAD.IOUS) and box-regression weights; each stage pools the
// previous stage's regressed boxes (detached, clipped), regresses class-agnostically, and in
// training labels those boxes against the ground truth at its own IoU (no sampling after stage
// 0). The pooled features' gradient is scaled by 1 / stages. Inference averages the stages'
// class probabilities and takes the last stage's boxes; the mask and keypoint heads run on the
// final boxes (training: on stage 0's sampled foreground). Child names: box_head.{0,1,2},
// box_predictor.{0,1,2}, mask_head, keypoint_head; losses loss_{cls,box_reg}_stage{k},
// loss_mask, loss_keypoint.
#include <memory>
#include <optional>
#include <vector>

#include "detkit/modeling/roi_heads/roi_heads.h"

namespace detkit::modeling {

class CascadeROIHeads : public ROIHeads {
 public:
  /// box_heads, box_predictors and stage_ious: one per stage; options.iou_thresholds is stage
  /// 0's matcher (Detectron2 requires it to equal stage_ious[0]).
  CascadeROIHeads(const StandardROIHeadsOptions& options, ROIPooler box_pooler,
                  std::vector<std::shared_ptr<BoxHead>> box_heads,
                  std::vector<FastRCNNOutputLayers> box_predictors, std::vector<double> stage_ious,
                  std::optional<ROIPooler> mask_pooler, std::shared_ptr<MaskHead> mask_head,
                  ROIBranch<KeypointHead> keypoint = {});

  ROIHeadsOutput forward(const structures::ImageList& images, const FeatureMap& features,
                         std::vector<structures::Instances> proposals,
                         const std::vector<structures::Instances>* targets) override;

  /// One stage on `proposals` ("proposal_boxes"): (scores (R, K + 1), deltas (R, 4)).
  std::pair<at::Tensor, at::Tensor> run_stage(const std::vector<at::Tensor>& features,
                                              const std::vector<structures::Instances>& proposals,
                                              size_t stage);
  /// Stage `stage`'s regressed boxes per image (Ri, 4).
  std::vector<at::Tensor> predict_boxes(const std::pair<at::Tensor, at::Tensor>& predictions,
                                        const std::vector<structures::Instances>& proposals,
                                        size_t stage) const;
  /// Stage k > 0's inputs: the boxes detached and clipped to their image; in training also
  /// without empty boxes.
  std::vector<structures::Instances> proposals_from_boxes(
      const std::vector<at::Tensor>& boxes, const std::vector<structures::Instances>& like) const;
  /// Labels every proposal at stage `stage`'s IoU: "gt_classes" (K below it) and "gt_boxes".
  std::vector<structures::Instances> match_and_label_boxes(
      std::vector<structures::Instances> proposals, size_t stage,
      const std::vector<structures::Instances>& targets) const;
  size_t num_stages() const { return box_heads_.size(); }

 private:
  StandardROIHeadsOptions options_;
  Matcher proposal_matcher_;
  std::vector<Matcher> stage_matchers_;
  ROIPooler box_pooler_;
  std::vector<std::shared_ptr<BoxHead>> box_heads_;
  std::vector<FastRCNNOutputLayers> box_predictors_;
  std::optional<ROIPooler> mask_pooler_;
  std::shared_ptr<MaskHead> mask_head_;
  std::optional<ROIPooler> keypoint_pooler_;
  std::shared_ptr<KeypointHead> keypoint_head_;
};

}  // namespace detkit::modeling
