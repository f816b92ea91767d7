#include "detkit/modeling/roi_heads/cascade_rcnn.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/container/modulelist.h>

#include "detkit/layers/scale_gradient.h"
#include "detkit/utils/error.h"
#include "detkit/utils/event_scalars.h"

namespace detkit::modeling {

using structures::Boxes;
using structures::Instances;

CascadeROIHeads::CascadeROIHeads(const StandardROIHeadsOptions& options, ROIPooler box_pooler,
                                 std::vector<std::shared_ptr<BoxHead>> box_heads,
                                 std::vector<FastRCNNOutputLayers> box_predictors,
                                 std::vector<double> stage_ious,
                                 std::optional<ROIPooler> mask_pooler,
                                 std::shared_ptr<MaskHead> mask_head,
                                 ROIBranch<KeypointHead> keypoint)
    : options_(options),
      proposal_matcher_(options.iou_thresholds, options.iou_labels,
                        /*allow_low_quality_matches=*/false),
      box_pooler_(std::move(box_pooler)),
      box_heads_(std::move(box_heads)),
      box_predictors_(std::move(box_predictors)),
      mask_pooler_(std::move(mask_pooler)),
      mask_head_(std::move(mask_head)),
      keypoint_pooler_(std::move(keypoint.pooler)),
      keypoint_head_(std::move(keypoint.head)) {
  if (box_heads_.empty() || box_heads_.size() != box_predictors_.size() ||
      box_heads_.size() != stage_ious.size())
    throw Error(
        "CascadeROIHeads: MODEL.ROI_BOX_CASCADE_HEAD.IOUS and BBOX_REG_WEIGHTS must "
        "name the same number of stages (at least one)");
  torch::nn::ModuleList heads, predictors;
  for (size_t k = 0; k < box_heads_.size(); ++k) {
    heads->push_back(box_heads_[k]);
    predictors->push_back(box_predictors_[k]);
    stage_matchers_.emplace_back(std::vector<double>{stage_ious[k]}, std::vector<int64_t>{0, 1},
                                 /*allow_low_quality_matches=*/false);
  }
  register_module("box_head", heads);
  register_module("box_predictor", predictors);
  if (mask_head_) register_module("mask_head", mask_head_);
  if (keypoint_head_) register_module("keypoint_head", keypoint_head_);
}

std::pair<at::Tensor, at::Tensor> CascadeROIHeads::run_stage(
    const std::vector<at::Tensor>& features, const std::vector<Instances>& proposals,
    size_t stage) {
  std::vector<Boxes> boxes;
  for (const auto& p : proposals) boxes.push_back(p.boxes("proposal_boxes"));
  at::Tensor x = box_pooler_(features, boxes);
  // Detectron2 sums the stages' losses and scales the features' gradient down instead of
  // averaging the losses and scaling the heads' gradients up.
  if (is_training()) x = layers::scale_gradient(x, 1.0 / static_cast<double>(num_stages()));
  return box_predictors_[stage]->forward(box_heads_[stage]->forward(x));
}

std::vector<at::Tensor> CascadeROIHeads::predict_boxes(
    const std::pair<at::Tensor, at::Tensor>& predictions, const std::vector<Instances>& proposals,
    size_t stage) const {
  return box_predictors_[stage]->predict_boxes(predictions, proposals);
}

std::vector<Instances> CascadeROIHeads::proposals_from_boxes(
    const std::vector<at::Tensor>& boxes, const std::vector<Instances>& like) const {
  std::vector<Instances> out;
  for (size_t i = 0; i < boxes.size(); ++i) {
    Boxes b(boxes[i].detach());
    b.clip(like[i].image_height(), like[i].image_width());
    // Inference keeps empty boxes: the stages' scores are averaged row by row.
    if (is_training()) b = Boxes(b.tensor().index({b.nonempty()}));
    Instances p(like[i].image_height(), like[i].image_width());
    p.set("proposal_boxes", b);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Instances> CascadeROIHeads::match_and_label_boxes(
    std::vector<Instances> proposals, size_t stage, const std::vector<Instances>& targets) const {
  at::NoGradGuard no_grad;
  double fg_samples = 0, bg_samples = 0;  // over the images, for Detectron2's event scalars
  for (size_t i = 0; i < proposals.size(); ++i) {
    const Instances& gt = targets[i];
    Instances& p = proposals[i];
    const MatchResult match = stage_matchers_[stage](
        structures::pairwise_iou(gt.boxes("gt_boxes"), p.boxes("proposal_boxes")));
    const double fg = gt.size() > 0 ? (match.match_labels == 1).sum().item<double>() : 0.0;
    fg_samples += fg;
    bg_samples += static_cast<double>(p.size()) - fg;
    if (gt.size() > 0) {
      at::Tensor classes = gt.tensor("gt_classes").to(at::kLong).index_select(0, match.matches);
      classes.masked_fill_(match.match_labels == 0, options_.num_classes);
      p.set("gt_classes", classes);
      p.set("gt_boxes", Boxes(gt.boxes("gt_boxes").tensor().index_select(0, match.matches)));
    } else {
      const at::TensorOptions options = p.boxes("proposal_boxes").tensor().options();
      p.set("gt_classes", at::full({p.size()}, options_.num_classes, options.dtype(at::kLong)));
      p.set("gt_boxes", Boxes(at::zeros({p.size(), 4}, options.dtype(at::kFloat))));
    }
  }
  if (!proposals.empty()) {
    const std::string prefix = "stage" + std::to_string(stage) + "/roi_head/";
    const auto n = static_cast<double>(proposals.size());
    put_event_scalar(prefix + "num_fg_samples", fg_samples / n);
    put_event_scalar(prefix + "num_bg_samples", bg_samples / n);
  }
  return proposals;
}

ROIHeadsOutput CascadeROIHeads::forward(const structures::ImageList& /*images*/,
                                        const FeatureMap& feature_map,
                                        std::vector<Instances> proposals,
                                        const std::vector<Instances>* targets) {
  const bool training = is_training();
  if (training && !targets) throw Error("ROI heads: training needs ground-truth instances");
  if (training)
    proposals =
        label_and_sample_proposals(std::move(proposals), *targets, proposal_matcher_, options_);
  const std::vector<at::Tensor> features = select_features(feature_map, options_.in_features);
  struct Stage {
    std::pair<at::Tensor, at::Tensor> predictions;
    std::vector<Instances> proposals;
  };
  std::vector<Stage> stages;
  std::vector<at::Tensor> previous_boxes;
  for (size_t k = 0; k < num_stages(); ++k) {
    std::vector<Instances> stage_proposals = proposals;
    if (k > 0) {
      stage_proposals = proposals_from_boxes(previous_boxes, proposals);
      if (training)
        stage_proposals = match_and_label_boxes(std::move(stage_proposals), k, *targets);
    }
    auto predictions = run_stage(features, stage_proposals, k);
    previous_boxes = predict_boxes(predictions, stage_proposals, k);
    stages.push_back({std::move(predictions), std::move(stage_proposals)});
  }
  ROIHeadsOutput out;
  if (training) {
    for (size_t k = 0; k < stages.size(); ++k) {
      EventNameScope stage_names("stage" + std::to_string(k));  // "stage1/fast_rcnn/..."
      for (auto& [name, loss] :
           box_predictors_[k]->losses(stages[k].predictions, stages[k].proposals))
        out.losses[name + "_stage" + std::to_string(k)] = loss;
    }
    if (mask_head_)
      for (auto& [name, loss] : forward_mask_branch(*mask_head_, *mask_pooler_, features, proposals,
                                                    true, options_.num_classes))
        out.losses[name] = loss;
    if (keypoint_head_)
      for (auto& [name, loss] : forward_keypoint_branch(*keypoint_head_, *keypoint_pooler_,
                                                        features, proposals, true,
                                                        options_.num_classes))
        out.losses[name] = loss;
    return out;
  }
  // The stages' probabilities averaged, the last stage's boxes.
  std::vector<at::Tensor> scores;
  for (size_t k = 0; k < stages.size(); ++k) {
    auto probs = box_predictors_[k]->predict_probs(stages[k].predictions, stages[k].proposals);
    for (size_t i = 0; i < probs.size(); ++i) {
      if (k == 0)
        scores.push_back(probs[i]);
      else
        scores[i] = scores[i] + probs[i];
    }
  }
  const FastRCNNOutputLayers& last = box_predictors_.back();
  const std::vector<at::Tensor> boxes =
      predict_boxes(stages.back().predictions, stages.back().proposals, stages.size() - 1);
  const auto& o = last->options();
  for (size_t i = 0; i < boxes.size(); ++i)
    out.instances.push_back(fast_rcnn_inference_single_image(
        boxes[i], scores[i] * (1.0 / static_cast<double>(stages.size())),
        proposals[i].image_height(), proposals[i].image_width(), o.test_score_thresh,
        o.test_nms_thresh, o.test_topk_per_image));
  if (mask_head_)
    forward_mask_branch(*mask_head_, *mask_pooler_, features, out.instances, false,
                        options_.num_classes);
  if (keypoint_head_)
    forward_keypoint_branch(*keypoint_head_, *keypoint_pooler_, features, out.instances, false,
                            options_.num_classes);
  return out;
}

DETKIT_REGISTER_ROI_HEADS(CascadeROIHeads, [](const config::CfgNode& cfg,
                                              const layers::ShapeSpecs& shapes) {
  const StandardROIHeadsOptions o = standard_roi_heads_options_from_config(cfg);
  const std::vector<double> ious = cfg.get_float_list("MODEL.ROI_BOX_CASCADE_HEAD.IOUS");
  const auto weights = cfg.get("MODEL.ROI_BOX_CASCADE_HEAD.BBOX_REG_WEIGHTS").as_float_list_list();
  if (weights.size() != ious.size())
    throw Error("MODEL.ROI_BOX_CASCADE_HEAD.BBOX_REG_WEIGHTS has " +
                std::to_string(weights.size()) + " entries for " + std::to_string(ious.size()) +
                " stages (IOUS)");
  if (!cfg.get_bool("MODEL.ROI_BOX_HEAD.CLS_AGNOSTIC_BBOX_REG"))
    throw Error(
        "CascadeROIHeads needs MODEL.ROI_BOX_HEAD.CLS_AGNOSTIC_BBOX_REG True "
        "(class-agnostic box regression), as Detectron2's");
  if (ious.empty() || o.iou_thresholds.empty() || ious[0] != o.iou_thresholds[0])
    throw Error("MODEL.ROI_BOX_CASCADE_HEAD.IOUS[0] must equal MODEL.ROI_HEADS.IOU_THRESHOLDS[0]");
  FeatureLevels levels = feature_levels(shapes, o.in_features, "MODEL.ROI_HEADS.IN_FEATURES");
  ROIPooler box_pooler(pooler_options_from_config(cfg, "ROI_BOX_HEAD", levels.strides));
  const int64_t res = box_pooler.options().output_size;
  std::vector<std::shared_ptr<BoxHead>> heads;
  std::vector<FastRCNNOutputLayers> predictors;
  for (size_t k = 0; k < ious.size(); ++k) {
    if (weights[k].size() != 4)
      throw Error("MODEL.ROI_BOX_CASCADE_HEAD.BBOX_REG_WEIGHTS[" + std::to_string(k) +
                  "] must hold 4 weights");
    heads.push_back(build_box_head(cfg, BoxHeadInput{levels.channels, res, res}));
    FastRCNNOutputLayersOptions p = fast_rcnn_options_from_config(cfg, heads.back()->output_size());
    p.bbox_reg_weights = {weights[k][0], weights[k][1], weights[k][2], weights[k][3]};
    predictors.emplace_back(p);
  }
  std::optional<ROIPooler> mask_pooler;
  std::shared_ptr<MaskHead> mask_head;
  if (o.mask_on) {
    mask_pooler.emplace(pooler_options_from_config(cfg, "ROI_MASK_HEAD", levels.strides));
    mask_head = build_mask_head(cfg, levels.channels);
  }
  return std::make_shared<CascadeROIHeads>(
      o, box_pooler, heads, predictors, ious, mask_pooler, mask_head,
      keypoint_branch_from_config(cfg, o, levels));
});

}  // namespace detkit::modeling
