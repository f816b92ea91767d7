#include "detkit/modeling/proposal_generator/rpn.h"

#include <ATen/ATen.h>

#include "detkit/layers/losses.h"
#include "detkit/modeling/proposal_utils.h"
#include "detkit/modeling/sampling.h"
#include "detkit/utils/error.h"
#include "detkit/utils/event_scalars.h"

namespace detkit::modeling {

using structures::Boxes;
using structures::Instances;

RPNOptions rpn_options_from_config(const config::CfgNode& cfg) {
  RPNOptions o;
  o.in_features = cfg.get_string_list("MODEL.RPN.IN_FEATURES");
  o.iou_thresholds = cfg.get_float_list("MODEL.RPN.IOU_THRESHOLDS");
  o.iou_labels = cfg.get_int_list("MODEL.RPN.IOU_LABELS");
  o.bbox_reg_weights = box_reg_weights_from_config(cfg, "MODEL.RPN.BBOX_REG_WEIGHTS");
  o.batch_size_per_image = cfg.get_int("MODEL.RPN.BATCH_SIZE_PER_IMAGE");
  o.positive_fraction = cfg.get_float("MODEL.RPN.POSITIVE_FRACTION");
  o.pre_nms_topk_train = cfg.get_int("MODEL.RPN.PRE_NMS_TOPK_TRAIN");
  o.pre_nms_topk_test = cfg.get_int("MODEL.RPN.PRE_NMS_TOPK_TEST");
  o.post_nms_topk_train = cfg.get_int("MODEL.RPN.POST_NMS_TOPK_TRAIN");
  o.post_nms_topk_test = cfg.get_int("MODEL.RPN.POST_NMS_TOPK_TEST");
  o.nms_thresh = cfg.get_float("MODEL.RPN.NMS_THRESH");
  o.min_box_size = static_cast<double>(cfg.get_int("MODEL.PROPOSAL_GENERATOR.MIN_SIZE"));
  o.boundary_thresh = cfg.get_int("MODEL.RPN.BOUNDARY_THRESH");
  o.smooth_l1_beta = cfg.get_float("MODEL.RPN.SMOOTH_L1_BETA");
  o.loss_weight = cfg.get_float("MODEL.RPN.LOSS_WEIGHT");
  o.bbox_reg_loss_weight = cfg.get_float("MODEL.RPN.BBOX_REG_LOSS_WEIGHT");
  o.box_reg_loss_type = cfg.get_string("MODEL.RPN.BBOX_REG_LOSS_TYPE");
  if (!layers::is_box_reg_loss_type(o.box_reg_loss_type))
    throw Error("MODEL.RPN.BBOX_REG_LOSS_TYPE '" + o.box_reg_loss_type +
                "' is not a box regression loss (smooth_l1, giou, diou, ciou)");
  return o;
}

RPN::RPN(const RPNOptions& o, std::shared_ptr<RPNHead> head,
         std::shared_ptr<AnchorGenerator> anchor_generator)
    : options_(o),
      head_(register_module("rpn_head", std::move(head))),
      anchor_generator_(register_module("anchor_generator", std::move(anchor_generator))),
      matcher_(o.iou_thresholds, o.iou_labels, /*allow_low_quality_matches=*/true),
      box2box_(o.bbox_reg_weights) {}

std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> RPN::label_and_sample_anchors(
    const Boxes& anchors, const std::vector<Instances>& gt_instances) {
  std::vector<at::Tensor> labels, matched_boxes;
  for (size_t i = 0; i < gt_instances.size(); ++i) {
    const Instances& gt = gt_instances[i];
    const Boxes& gt_boxes = gt.boxes("gt_boxes");
    MatchResult match = matcher_(structures::pairwise_iou(gt_boxes, anchors));
    at::Tensor label = match.match_labels.to(at::kLong);
    if (options_.boundary_thresh >= 0) {
      at::Tensor inside = anchors.inside_box(gt.image_height(), gt.image_width(),
                                             options_.boundary_thresh);
      label.masked_fill_(inside.logical_not(), -1);
    }
    SampledIndices sampled = subsample_labels(label, options_.batch_size_per_image,
                                              options_.positive_fraction, 0, image_generator(i));
    label.fill_(-1);
    label.index_fill_(0, sampled.pos_idx, 1);
    label.index_fill_(0, sampled.neg_idx, 0);
    labels.push_back(label);
    matched_boxes.push_back(gt_boxes.size() == 0
                                ? at::zeros_like(anchors.tensor())
                                : gt_boxes.tensor().index_select(0, match.matches));
  }
  return {labels, matched_boxes};
}

LossDict RPN::losses(const Boxes& anchors, const at::Tensor& pred_logits,
                     const std::vector<at::Tensor>& gt_labels, const at::Tensor& pred_deltas,
                     const std::vector<at::Tensor>& gt_boxes) const {
  const int64_t num_images = static_cast<int64_t>(gt_labels.size());
  at::Tensor labels = at::stack(gt_labels);  // (N, R)
  at::Tensor pos_mask = labels == 1;
  if (event_scalars_wanted()) {  // Detectron2's, per image
    put_event_scalar("rpn/num_pos_anchors", pos_mask.sum().item<double>() / num_images);
    put_event_scalar("rpn/num_neg_anchors", (labels == 0).sum().item<double>() / num_images);
  }
  at::Tensor localization;
  if (options_.box_reg_loss_type == "smooth_l1") {
    std::vector<at::Tensor> gt_deltas;
    for (const auto& boxes : gt_boxes)
      gt_deltas.push_back(box2box_.get_deltas(anchors.tensor(), boxes));
    localization =
        layers::smooth_l1_loss_sum(pred_deltas.index({pos_mask}),
                                   at::stack(gt_deltas).index({pos_mask}), options_.smooth_l1_beta);
  } else {  // Detectron2's _dense_box_regression_loss: the loss on decoded boxes
    std::vector<at::Tensor> pred_boxes;
    for (int64_t i = 0; i < pred_deltas.size(0); ++i)
      pred_boxes.push_back(box2box_.apply_deltas(pred_deltas[i], anchors.tensor()));
    localization = layers::iou_box_reg_loss_sum(options_.box_reg_loss_type,
                                                at::stack(pred_boxes).index({pos_mask}),
                                                at::stack(gt_boxes).index({pos_mask}));
  }
  at::Tensor valid = labels >= 0;
  at::Tensor objectness = at::binary_cross_entropy_with_logits(
      pred_logits.index({valid}), labels.index({valid}).to(at::kFloat), {}, {}, at::Reduction::Sum);
  const double normalizer = static_cast<double>(options_.batch_size_per_image * num_images);
  return {{"loss_rpn_cls", objectness / normalizer * options_.loss_weight},
          {"loss_rpn_loc",
           localization / normalizer * options_.loss_weight * options_.bbox_reg_loss_weight}};
}

ProposalOutput RPN::forward(const structures::ImageList& images, const FeatureMap& features,
                            const std::vector<Instances>* gt_instances) {
  std::vector<at::Tensor> maps;
  for (const auto& name : options_.in_features) {
    auto it = features.find(name);
    if (it == features.end()) throw Error("MODEL.RPN.IN_FEATURES: no feature '" + name + "'");
    maps.push_back(it->second);
  }
  std::vector<Boxes> anchors = anchor_generator_->forward(maps);
  auto [logit_maps, delta_maps] = head_->forward(maps);
  // (N, A, H, W) -> (N, H*W*A); (N, A*4, H, W) -> (N, H*W*A, 4): location-major like anchors.
  std::vector<at::Tensor> logits, deltas;
  for (size_t i = 0; i < maps.size(); ++i) {
    logits.push_back(logit_maps[i].permute({0, 2, 3, 1}).flatten(1));
    const at::Tensor& d = delta_maps[i];
    deltas.push_back(d.view({d.size(0), -1, 4, d.size(2), d.size(3)})
                         .permute({0, 3, 4, 1, 2})
                         .flatten(1, -2));
  }
  ProposalOutput out;
  if (is_training()) {
    if (!gt_instances) throw Error("RPN: training needs ground-truth instances");
    Boxes all_anchors = Boxes::cat(anchors);
    auto [gt_labels, gt_boxes] = label_and_sample_anchors(all_anchors, *gt_instances);
    out.losses = losses(all_anchors, at::cat(logits, 1), gt_labels, at::cat(deltas, 1), gt_boxes);
  }
  {
    at::NoGradGuard no_grad;
    const int64_t n = images.size();
    std::vector<at::Tensor> proposals, detached_logits;
    for (size_t i = 0; i < maps.size(); ++i) {
      at::Tensor a = anchors[i].tensor().unsqueeze(0).expand({n, -1, -1}).reshape({-1, 4});
      proposals.push_back(box2box_.apply_deltas(deltas[i].reshape({-1, 4}), a).view({n, -1, 4}));
      detached_logits.push_back(logits[i].detach());
    }
    bool training = is_training();
    out.proposals = find_top_rpn_proposals(
        proposals, detached_logits, images.image_sizes(), options_.nms_thresh,
        training ? options_.pre_nms_topk_train : options_.pre_nms_topk_test,
        training ? options_.post_nms_topk_train : options_.post_nms_topk_test,
        options_.min_box_size, training);
  }
  return out;
}

DETKIT_REGISTER_PROPOSAL_GENERATOR(RPN, [](const config::CfgNode& cfg,
                                           const layers::ShapeSpecs& shapes) {
  RPNOptions o = rpn_options_from_config(cfg);
  FeatureLevels levels = feature_levels(shapes, o.in_features, "MODEL.RPN.IN_FEATURES");
  auto anchors = build_anchor_generator(cfg, levels.strides);
  auto head = build_rpn_head(cfg, levels.channels, anchors->num_anchors(), anchors->box_dim());
  return std::make_shared<RPN>(o, std::move(head), std::move(anchors));
});

}  // namespace detkit::modeling
