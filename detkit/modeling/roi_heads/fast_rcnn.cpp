#include "detkit/modeling/roi_heads/fast_rcnn.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include "detkit/layers/losses.h"
#include "detkit/layers/precision.h"
#include "detkit/modeling/roi_heads/fed_loss.h"
#include "detkit/ops/batched_nms.h"
#include "detkit/utils/class_frequency.h"
#include "detkit/utils/error.h"
#include "detkit/utils/event_scalars.h"

namespace detkit::modeling {

using structures::Boxes;
using structures::Instances;

FastRCNNOutputLayersOptions fast_rcnn_options_from_config(const config::CfgNode& cfg,
                                                          int64_t input_size) {
  FastRCNNOutputLayersOptions o;
  o.input_size = input_size;
  o.num_classes = cfg.get_int("MODEL.ROI_HEADS.NUM_CLASSES");
  o.cls_agnostic_bbox_reg = cfg.get_bool("MODEL.ROI_BOX_HEAD.CLS_AGNOSTIC_BBOX_REG");
  o.bbox_reg_weights = box_reg_weights_from_config(cfg, "MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS");
  o.smooth_l1_beta = cfg.get_float("MODEL.ROI_BOX_HEAD.SMOOTH_L1_BETA");
  o.bbox_reg_loss_weight = cfg.get_float("MODEL.ROI_BOX_HEAD.BBOX_REG_LOSS_WEIGHT");
  o.test_score_thresh = cfg.get_float("MODEL.ROI_HEADS.SCORE_THRESH_TEST");
  o.test_nms_thresh = cfg.get_float("MODEL.ROI_HEADS.NMS_THRESH_TEST");
  o.test_topk_per_image = cfg.get_int("TEST.DETECTIONS_PER_IMAGE");
  o.box_reg_loss_type = cfg.get_string("MODEL.ROI_BOX_HEAD.BBOX_REG_LOSS_TYPE");
  if (!layers::is_box_reg_loss_type(o.box_reg_loss_type))
    throw Error("MODEL.ROI_BOX_HEAD.BBOX_REG_LOSS_TYPE '" + o.box_reg_loss_type +
                "' is not a box regression loss (smooth_l1, giou, diou, ciou)");
  o.use_sigmoid_ce = cfg.get_bool("MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE");
  o.use_fed_loss = cfg.get_bool("MODEL.ROI_BOX_HEAD.USE_FED_LOSS");
  if (!o.use_fed_loss) return o;
  if (!o.use_sigmoid_ce)
    throw Error(
        "MODEL.ROI_BOX_HEAD.USE_FED_LOSS True needs MODEL.ROI_BOX_HEAD.USE_SIGMOID_CE True (the "
        "federated loss is a sigmoid cross-entropy), as Detectron2's");
  o.fed_loss_num_classes = cfg.get_int("MODEL.ROI_BOX_HEAD.FED_LOSS_NUM_CLASSES");
  if (o.fed_loss_num_classes < 1)
    throw Error("MODEL.ROI_BOX_HEAD.FED_LOSS_NUM_CLASSES must be at least 1, got " +
                std::to_string(o.fed_loss_num_classes));
  o.fed_loss_cls_weights =
      read_class_frequency_weights(cfg.get_string_list("DATASETS.TRAIN"),
                                   cfg.get_float("MODEL.ROI_BOX_HEAD.FED_LOSS_FREQ_WEIGHT_POWER"),
                                   "MODEL.ROI_BOX_HEAD.USE_FED_LOSS");
  if (static_cast<int64_t>(o.fed_loss_cls_weights.size()) != o.num_classes)
    throw Error("MODEL.ROI_BOX_HEAD.USE_FED_LOSS True: DATASETS.TRAIN's class_image_count has " +
                std::to_string(o.fed_loss_cls_weights.size()) +
                " classes, MODEL.ROI_HEADS.NUM_CLASSES is " + std::to_string(o.num_classes));
  return o;
}

FastRCNNOutputLayersImpl::FastRCNNOutputLayersImpl(const FastRCNNOutputLayersOptions& o)
    : options_(o), box2box_(o.bbox_reg_weights) {
  const int64_t reg_classes = o.cls_agnostic_bbox_reg ? 1 : o.num_classes;
  cls_score_ = register_module("cls_score", torch::nn::Linear(o.input_size, o.num_classes + 1));
  bbox_pred_ = register_module("bbox_pred", torch::nn::Linear(o.input_size, reg_classes * 4));
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(cls_score_->weight, 0.0, 0.01);
  torch::nn::init::normal_(bbox_pred_->weight, 0.0, 0.001);
  cls_score_->bias.zero_();
  bbox_pred_->bias.zero_();
  if (!o.use_fed_loss) return;
  if (!o.use_sigmoid_ce) throw Error("FastRCNNOutputLayers: use_fed_loss needs use_sigmoid_ce");
  if (o.fed_loss_num_classes < 1)
    throw Error("FastRCNNOutputLayers: fed_loss_num_classes must be at least 1, got " +
                std::to_string(o.fed_loss_num_classes));
  if (static_cast<int64_t>(o.fed_loss_cls_weights.size()) != o.num_classes)
    throw Error("FastRCNNOutputLayers: " + std::to_string(o.fed_loss_cls_weights.size()) +
                " fed_loss_cls_weights for " + std::to_string(o.num_classes) + " classes");
  // float32, as Detectron2's buffer (class_freq.float() ** power).
  fed_loss_cls_weights_ = register_buffer(
      "fed_loss_cls_weights", at::tensor(o.fed_loss_cls_weights, at::kDouble).to(at::kFloat));
}

std::pair<at::Tensor, at::Tensor> FastRCNNOutputLayersImpl::forward(const at::Tensor& x) {
  at::Tensor flat = x.dim() > 2 ? x.flatten(1) : x;
  return {cls_score_->forward(flat), bbox_pred_->forward(flat)};
}

namespace {
// Detectron2's _log_classification_stats: accuracy over the sampled ROIs, and over the
// foreground ones the accuracy and the share classified as background.
void log_classification_stats(const at::Tensor& logits, const at::Tensor& gt_classes) {
  if (!event_scalars_wanted() || gt_classes.numel() == 0) return;
  at::NoGradGuard no_grad;
  const at::Tensor predicted = logits.argmax(1);
  const int64_t background = logits.size(1) - 1;
  const at::Tensor fg = (gt_classes >= 0) & (gt_classes < background);
  const double num_fg = fg.sum().item<double>();
  put_event_scalar("fast_rcnn/cls_accuracy", (predicted == gt_classes).sum().item<double>() /
                                                 static_cast<double>(gt_classes.numel()));
  if (num_fg > 0) {
    const at::Tensor fg_predicted = predicted.index({fg});
    put_event_scalar("fast_rcnn/fg_cls_accuracy",
                     (fg_predicted == gt_classes.index({fg})).sum().item<double>() / num_fg);
    put_event_scalar("fast_rcnn/false_negative",
                     (fg_predicted == background).sum().item<double>() / num_fg);
  }
}
}  // namespace

at::Tensor FastRCNNOutputLayersImpl::classification_loss(const at::Tensor& logits,
                                                         const at::Tensor& gt_classes) const {
  if (!options_.use_sigmoid_ce)
    return gt_classes.numel() == 0 ? logits.sum() * 0.0
                                   : at::cross_entropy_loss(logits, gt_classes);
  if (!options_.use_fed_loss) return sigmoid_cross_entropy_loss(logits, gt_classes);
  if (gt_classes.numel() == 0) return logits.sum() * 0.0;  // nothing to draw classes for
  const at::Tensor classes = fed_loss_classes(gt_classes, options_.fed_loss_num_classes,
                                              fed_loss_cls_weights_.to(gt_classes.device()));
  return sigmoid_cross_entropy_loss(logits, gt_classes,
                                    fed_loss_class_mask(classes, options_.num_classes));
}

LossDict FastRCNNOutputLayersImpl::losses(const std::pair<at::Tensor, at::Tensor>& predictions,
                                          const std::vector<Instances>& proposals) const {
  const auto& [scores, deltas] = predictions;
  std::vector<at::Tensor> classes, proposal_boxes, gt_boxes;
  for (const auto& p : proposals) {
    classes.push_back(p.tensor("gt_classes"));
    proposal_boxes.push_back(p.boxes("proposal_boxes").tensor());
    gt_boxes.push_back(p.has("gt_boxes") ? p.boxes("gt_boxes").tensor()
                                         : p.boxes("proposal_boxes").tensor());
  }
  at::Tensor gt_classes =
      classes.empty() ? at::zeros({0}, scores.options().dtype(at::kLong)) : at::cat(classes);
  log_classification_stats(scores, gt_classes);
  at::Tensor loss_cls = classification_loss(scores, gt_classes);
  // Box regression on foreground ROIs, with the deltas of their ground-truth class.
  const at::TensorOptions no_boxes = deltas.options().dtype(at::kFloat);
  at::Tensor props = proposal_boxes.empty() ? at::zeros({0, 4}, no_boxes) : at::cat(proposal_boxes);
  at::Tensor targets = gt_boxes.empty() ? at::zeros({0, 4}, no_boxes) : at::cat(gt_boxes);
  at::Tensor fg = ((gt_classes >= 0) & (gt_classes < options_.num_classes)).nonzero().select(1, 0);
  at::Tensor fg_deltas =
      deltas.size(1) == 4
          ? deltas.index_select(0, fg)
          : deltas.view({-1, options_.num_classes, 4}).index({fg, gt_classes.index_select(0, fg)});
  at::Tensor loss_box;
  if (options_.box_reg_loss_type == "smooth_l1") {
    at::Tensor gt_deltas =
        box2box_.get_deltas(props.index_select(0, fg), targets.index_select(0, fg));
    loss_box = layers::smooth_l1_loss_sum(fg_deltas, gt_deltas, options_.smooth_l1_beta);
  } else {  // on the decoded boxes, as Detectron2's _dense_box_regression_loss
    loss_box = layers::iou_box_reg_loss_sum(
        options_.box_reg_loss_type, box2box_.apply_deltas(fg_deltas, props.index_select(0, fg)),
        targets.index_select(0, fg));
  }
  loss_box = loss_box / std::max<double>(gt_classes.numel(), 1.0);
  return {{"loss_cls", loss_cls}, {"loss_box_reg", loss_box * options_.bbox_reg_loss_weight}};
}

Instances fast_rcnn_inference_single_image(at::Tensor boxes, at::Tensor scores,
                                           int64_t image_height, int64_t image_width,
                                           double score_thresh, double nms_thresh,
                                           int64_t topk_per_image) {
  at::Tensor valid = at::isfinite(boxes).all(1) & at::isfinite(scores).all(1);
  if (!valid.all().item<bool>()) {
    boxes = boxes.index({valid});
    scores = scores.index({valid});
  }
  scores = scores.narrow(1, 0, scores.size(1) - 1);  // drop background
  const int64_t reg_classes = boxes.size(1) / 4;
  Boxes flat(boxes.reshape({-1, 4}));
  flat.clip(image_height, image_width);
  boxes = flat.tensor().view({-1, reg_classes, 4});
  at::Tensor mask = scores > score_thresh;  // (R, K)
  at::Tensor inds = mask.nonzero();         // (D, 2): roi, class
  at::Tensor kept_boxes = reg_classes == 1 ? boxes.select(1, 0).index_select(0, inds.select(1, 0))
                                           : boxes.index({mask});
  at::Tensor kept_scores = scores.index({mask});
  at::Tensor keep = ops::batched_nms(kept_boxes, kept_scores, inds.select(1, 1), nms_thresh);
  if (topk_per_image >= 0 && keep.size(0) > topk_per_image)
    keep = keep.narrow(0, 0, topk_per_image);
  Instances result(image_height, image_width);
  result.set("pred_boxes", Boxes(kept_boxes.index_select(0, keep)));
  result.set("scores", kept_scores.index_select(0, keep));
  result.set("pred_classes", inds.select(1, 1).index_select(0, keep));
  return result;
}

namespace {
std::vector<int64_t> sizes_of(const std::vector<Instances>& proposals) {
  std::vector<int64_t> counts;
  for (const auto& p : proposals) counts.push_back(p.size());
  return counts;
}
}  // namespace

std::vector<at::Tensor> FastRCNNOutputLayersImpl::predict_boxes(
    const std::pair<at::Tensor, at::Tensor>& predictions,
    const std::vector<Instances>& proposals) const {
  std::vector<at::Tensor> proposal_boxes;
  for (const auto& p : proposals) proposal_boxes.push_back(p.boxes("proposal_boxes").tensor());
  at::Tensor boxes = box2box_.apply_deltas(predictions.second, at::cat(proposal_boxes));
  return boxes.split_with_sizes(sizes_of(proposals));
}

std::vector<at::Tensor> FastRCNNOutputLayersImpl::predict_probs(
    const std::pair<at::Tensor, at::Tensor>& predictions,
    const std::vector<Instances>& proposals) const {
  const at::Tensor logits = layers::fp32_if_reduced(predictions.first);
  return (options_.use_sigmoid_ce ? at::sigmoid(logits) : at::softmax(logits, -1))
      .split_with_sizes(sizes_of(proposals));
}

std::vector<Instances> FastRCNNOutputLayersImpl::inference(
    const std::pair<at::Tensor, at::Tensor>& predictions,
    const std::vector<Instances>& proposals) const {
  const std::vector<at::Tensor> boxes = predict_boxes(predictions, proposals);
  const std::vector<at::Tensor> probs = predict_probs(predictions, proposals);
  std::vector<Instances> out;
  for (size_t i = 0; i < proposals.size(); ++i)
    out.push_back(fast_rcnn_inference_single_image(
        boxes[i], probs[i], proposals[i].image_height(), proposals[i].image_width(),
        options_.test_score_thresh, options_.test_nms_thresh, options_.test_topk_per_image));
  return out;
}

}  // namespace detkit::modeling
