#pragma once
// RPN: Region Proposal Network as Detectron2's: anchors on each feature map, StandardRPNHead,
// anchor labelling (Matcher with low-quality matches, boundary filter, balanced sampling),
// losses normalised by BATCH_SIZE_PER_IMAGE * images, and proposal selection.
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "detkit/modeling/anchor_generator.h"
#include "detkit/modeling/box_regression.h"
#include "detkit/modeling/matcher.h"
#include "detkit/modeling/proposal_generator/proposal_generator.h"
#include "detkit/modeling/proposal_generator/rpn_head.h"

namespace detkit::modeling {

struct RPNOptions {
  std::vector<std::string> in_features;
  std::vector<double> iou_thresholds = {0.3, 0.7};
  std::vector<int64_t> iou_labels = {0, -1, 1};
  std::array<double, 4> bbox_reg_weights = {1, 1, 1, 1};
  int64_t batch_size_per_image = 256;
  double positive_fraction = 0.5;
  int64_t pre_nms_topk_train = 2000, pre_nms_topk_test = 1000;
  int64_t post_nms_topk_train = 1000, post_nms_topk_test = 1000;
  double nms_thresh = 0.7;
  double min_box_size = 0;
  int64_t boundary_thresh = -1;  // < 0: anchors crossing the image border are kept
  std::string box_reg_loss_type = "smooth_l1";  // or giou, diou, ciou
  double smooth_l1_beta = 0;
  double loss_weight = 1.0, bbox_reg_loss_weight = 1.0;
};

/// MODEL.RPN.*, MODEL.PROPOSAL_GENERATOR.MIN_SIZE.
RPNOptions rpn_options_from_config(const config::CfgNode& cfg);

class RPN : public ProposalGenerator {
 public:
  RPN(const RPNOptions& options, std::shared_ptr<RPNHead> head,
      std::shared_ptr<AnchorGenerator> anchor_generator);
  ProposalOutput forward(const structures::ImageList& images, const FeatureMap& features,
                         const std::vector<structures::Instances>* gt_instances) override;

  /// Per image: (N_anchors) labels 1/0/-1 after sampling, and (N_anchors, 4) matched GT boxes.
  std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> label_and_sample_anchors(
      const structures::Boxes& anchors, const std::vector<structures::Instances>& gt_instances);

 private:
  LossDict losses(const structures::Boxes& anchors, const at::Tensor& pred_logits,
                  const std::vector<at::Tensor>& gt_labels, const at::Tensor& pred_deltas,
                  const std::vector<at::Tensor>& gt_boxes) const;

  RPNOptions options_;
  std::shared_ptr<RPNHead> head_;
  std::shared_ptr<AnchorGenerator> anchor_generator_;
  Matcher matcher_;
  Box2BoxTransform box2box_;
};

}  // namespace detkit::modeling
