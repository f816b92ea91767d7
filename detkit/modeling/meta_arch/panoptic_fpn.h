#pragma once
// PanopticFPN (Detectron2's): a GeneralizedRCNN whose FPN features also feed a semantic head.
// Training adds "loss_sem_seg" to the R-CNN losses (the box and mask losses times
// MODEL.PANOPTIC_FPN.INSTANCE_LOSS_WEIGHT); inference gives per image "instances", "sem_seg" and
// "panoptic_seg", the two combined (panoptic_combine.h). Child names: backbone,
// proposal_generator, roi_heads, sem_seg_head — so state dicts match Detectron2's.
#include <memory>
#include <string>
#include <vector>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/modeling/meta_arch/panoptic_combine.h"
#include "detkit/modeling/sem_seg/sem_seg_head.h"

namespace detkit::modeling {

class PanopticFPN : public GeneralizedRCNN {
 public:
  PanopticFPN(std::shared_ptr<Backbone> backbone,
              std::shared_ptr<ProposalGenerator> proposal_generator,
              std::shared_ptr<ROIHeads> roi_heads, std::shared_ptr<SemSegHead> sem_seg_head,
              std::vector<double> pixel_mean, std::vector<double> pixel_std,
              PanopticCombineOptions combine, double instance_loss_weight = 1.0);

  /// Training mode: "loss_sem_seg" (from each input's `sem_seg`) and the R-CNN losses.
  structures::LossDict losses(const std::vector<structures::ModelInput>& batch) override;
  /// Eval mode: "instances", "sem_seg" and "panoptic_seg" per image.
  std::vector<structures::ModelOutput> outputs(
      const std::vector<structures::ModelInput>& batch) override;
  /// The instances of outputs(), as a detector's (COCOEvaluator's input).
  std::vector<structures::Instances> inference(
      const std::vector<structures::ModelInput>& batch) override;
  std::string name() const override { return "PanopticFPN"; }

  const std::shared_ptr<SemSegHead>& sem_seg_head() const { return sem_seg_head_; }
  const PanopticCombineOptions& combine_options() const { return combine_; }

 private:
  std::shared_ptr<SemSegHead> sem_seg_head_;
  PanopticCombineOptions combine_;
  double instance_loss_weight_;
};

/// PanopticFPN from the config (MODEL.META_ARCHITECTURE "PanopticFPN"): GeneralizedRCNN's parts,
/// MODEL.SEM_SEG_HEAD and MODEL.PANOPTIC_FPN.
std::shared_ptr<PanopticFPN> build_panoptic_fpn(const config::CfgNode& cfg);

}  // namespace detkit::modeling
