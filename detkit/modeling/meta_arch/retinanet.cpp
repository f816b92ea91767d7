#include "detkit/modeling/meta_arch/retinanet.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "detkit/layers/losses.h"
#include "detkit/layers/precision.h"
#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/modeling/meta_arch/preprocess.h"
#include "detkit/ops/batched_nms.h"
#include "detkit/utils/error.h"
#include "detkit/utils/event_scalars.h"

namespace detkit::modeling {

using structures::Boxes;
using structures::Instances;
using structures::LossDict;
using structures::ModelInput;

RetinaNetOptions retinanet_options_from_config(const config::CfgNode& cfg) {
  RetinaNetOptions o;
  o.in_features = cfg.get_string_list("MODEL.RETINANET.IN_FEATURES");
  o.num_classes = cfg.get_int("MODEL.RETINANET.NUM_CLASSES");
  o.iou_thresholds = cfg.get_float_list("MODEL.RETINANET.IOU_THRESHOLDS");
  o.iou_labels = cfg.get_int_list("MODEL.RETINANET.IOU_LABELS");
  o.bbox_reg_weights = box_reg_weights_from_config(cfg, "MODEL.RETINANET.BBOX_REG_WEIGHTS");
  o.focal_loss_alpha = cfg.get_float("MODEL.RETINANET.FOCAL_LOSS_ALPHA");
  o.focal_loss_gamma = cfg.get_float("MODEL.RETINANET.FOCAL_LOSS_GAMMA");
  o.box_reg_loss_type = cfg.get_string("MODEL.RETINANET.BBOX_REG_LOSS_TYPE");
  o.smooth_l1_beta = cfg.get_float("MODEL.RETINANET.SMOOTH_L1_LOSS_BETA");
  o.score_thresh_test = cfg.get_float("MODEL.RETINANET.SCORE_THRESH_TEST");
  o.topk_candidates_test = cfg.get_int("MODEL.RETINANET.TOPK_CANDIDATES_TEST");
  o.nms_thresh_test = cfg.get_float("MODEL.RETINANET.NMS_THRESH_TEST");
  o.detections_per_image = cfg.get_int("TEST.DETECTIONS_PER_IMAGE");
  if (!layers::is_box_reg_loss_type(o.box_reg_loss_type))
    throw Error("MODEL.RETINANET.BBOX_REG_LOSS_TYPE '" + o.box_reg_loss_type +
                "' is not a box regression loss (smooth_l1, giou, diou, ciou)");
  if (o.num_classes < 1) throw Error("MODEL.RETINANET.NUM_CLASSES must be >= 1");
  return o;
}

RetinaNet::RetinaNet(std::shared_ptr<Backbone> backbone, RetinaNetHead head,
                     std::shared_ptr<AnchorGenerator> anchor_generator, RetinaNetOptions options,
                     std::vector<double> pixel_mean, std::vector<double> pixel_std)
    : backbone_(register_module("backbone", std::move(backbone))),
      head_(register_module("head", std::move(head))),
      anchor_generator_(register_module("anchor_generator", std::move(anchor_generator))),
      options_(std::move(options)),
      matcher_(options_.iou_thresholds, options_.iou_labels, /*allow_low_quality_matches=*/true),
      box2box_(options_.bbox_reg_weights) {
  std::tie(pixel_mean_, pixel_std_) = pixel_normalization(pixel_mean, pixel_std);
}

void RetinaNet::to(torch::Device device, bool non_blocking) {
  MetaArch::to(device, non_blocking);
  pixel_mean_ = pixel_mean_.to(device);
  pixel_std_ = pixel_std_.to(device);
}

structures::ImageList RetinaNet::preprocess_image(const std::vector<ModelInput>& batch) const {
  return normalize_and_pad_images(batch, pixel_mean_, pixel_std_, backbone_->size_divisibility(),
                                  "RetinaNet");
}

std::vector<at::Tensor> RetinaNet::head_features(const structures::FeatureMap& features) const {
  std::vector<at::Tensor> maps;
  for (const auto& name : options_.in_features) {
    auto it = features.find(name);
    if (it == features.end()) throw Error("MODEL.RETINANET.IN_FEATURES: no feature '" + name + "'");
    maps.push_back(it->second);
  }
  return maps;
}

DensePredictions RetinaNet::predict(const std::vector<at::Tensor>& features) {
  auto [logit_maps, delta_maps] = head_->forward(features);
  // (N, A * C, H, W) -> (N, H * W * A, C): position-major, then anchor, like the anchors.
  auto transpose = [](const at::Tensor& x, int64_t c) {
    return x.view({x.size(0), -1, c, x.size(2), x.size(3)})
        .permute({0, 3, 4, 1, 2})
        .reshape({x.size(0), -1, c});
  };
  DensePredictions out;
  for (size_t i = 0; i < features.size(); ++i) {
    out.logits.push_back(transpose(logit_maps[i], options_.num_classes));
    out.deltas.push_back(transpose(delta_maps[i], 4));
  }
  return out;
}

std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> RetinaNet::label_anchors(
    const Boxes& anchors, const std::vector<Instances>& targets) const {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> labels, matched_boxes;
  for (const Instances& gt : targets) {
    const Boxes& gt_boxes = gt.boxes("gt_boxes");
    if (gt_boxes.size() == 0) {
      labels.push_back(
          at::full({anchors.size()}, options_.num_classes,
                   at::TensorOptions().dtype(at::kLong).device(anchors.tensor().device())));
      matched_boxes.push_back(at::zeros_like(anchors.tensor()));
      continue;
    }
    const MatchResult match = matcher_(structures::pairwise_iou(gt_boxes, anchors));
    at::Tensor label = gt.tensor("gt_classes").to(at::kLong).index_select(0, match.matches);
    label.masked_fill_(match.match_labels == 0, options_.num_classes);
    label.masked_fill_(match.match_labels == -1, -1);
    labels.push_back(label);
    matched_boxes.push_back(gt_boxes.tensor().index_select(0, match.matches));
  }
  return {labels, matched_boxes};
}

LossDict RetinaNet::dense_losses(const Boxes& anchors, const DensePredictions& predictions,
                                 const std::vector<at::Tensor>& gt_labels,
                                 const std::vector<at::Tensor>& gt_boxes) {
  const at::Tensor labels = at::stack(gt_labels);  // (N, R)
  const at::Tensor valid = labels >= 0;
  const at::Tensor foreground = valid & (labels != options_.num_classes);
  const int64_t num_foreground = foreground.sum().item<int64_t>();
  put_event_scalar("num_pos_anchors",  // Detectron2's, per image
                   static_cast<double>(num_foreground) / static_cast<double>(labels.size(0)));
  loss_normalizer_ = 0.9 * loss_normalizer_ + 0.1 * std::max<int64_t>(num_foreground, 1);

  const at::Tensor logits = at::cat(predictions.logits, 1);  // (N, R, K)
  const at::Tensor targets = at::one_hot(labels.index({valid}), options_.num_classes + 1)
                                 .slice(1, 0, options_.num_classes)
                                 .to(logits.scalar_type());
  const at::Tensor loss_cls = layers::sigmoid_focal_loss_sum(
      logits.index({valid}), targets, options_.focal_loss_alpha, options_.focal_loss_gamma);

  const at::Tensor deltas = at::cat(predictions.deltas, 1);  // (N, R, 4)
  at::Tensor loss_box_reg;
  if (options_.box_reg_loss_type == "smooth_l1") {
    std::vector<at::Tensor> gt_deltas;
    for (const at::Tensor& boxes : gt_boxes)
      gt_deltas.push_back(box2box_.get_deltas(anchors.tensor(), boxes));
    loss_box_reg = layers::smooth_l1_loss_sum(deltas.index({foreground}),
                                              at::stack(gt_deltas).index({foreground}),
                                              options_.smooth_l1_beta);
  } else {
    std::vector<at::Tensor> pred_boxes;
    for (int64_t i = 0; i < deltas.size(0); ++i)
      pred_boxes.push_back(box2box_.apply_deltas(deltas[i], anchors.tensor()));
    loss_box_reg = layers::iou_box_reg_loss_sum(options_.box_reg_loss_type,
                                                at::stack(pred_boxes).index({foreground}),
                                                at::stack(gt_boxes).index({foreground}));
  }
  return {{"loss_cls", loss_cls / loss_normalizer_},
          {"loss_box_reg", loss_box_reg / loss_normalizer_}};
}

LossDict RetinaNet::losses(const std::vector<ModelInput>& batch) {
  TORCH_CHECK(is_training(), "RetinaNet::losses needs training mode (model->train())");
  // The loader's targets are on the host; the model matches them where preprocess_image puts
  // the images (the pixel mean's device).
  std::vector<Instances> targets;
  for (const auto& input : batch) {
    if (!input.instances) throw Error("RetinaNet: a training input has no instances");
    targets.push_back(input.instances->to(pixel_mean_.device()));
  }
  const structures::ImageList images = preprocess_image(batch);
  const std::vector<at::Tensor> features = head_features(backbone_->forward(images.tensor()));
  const DensePredictions predictions = predict(features);
  const Boxes anchors = Boxes::cat(anchor_generator_->forward(features));
  auto [gt_labels, gt_boxes] = label_anchors(anchors, targets);
  return dense_losses(anchors, predictions, gt_labels, gt_boxes);
}

Instances RetinaNet::inference_single_image(const std::vector<Boxes>& anchors,
                                            const DensePredictions& predictions, int64_t image,
                                            std::pair<int64_t, int64_t> image_size) const {
  const int64_t num_classes = options_.num_classes;
  std::vector<Instances> levels;
  for (size_t level = 0; level < anchors.size(); ++level) {
    // (R * K) scores, flat index = anchor * K + class, as nonzero() of Detectron2's (R, K) mask
    const at::Tensor scores = layers::fp32_if_reduced(predictions.logits[level][image]).sigmoid().flatten();
    at::Tensor candidates = (scores > options_.score_thresh_test).nonzero().squeeze(1);
    const int64_t k = std::min<int64_t>(candidates.size(0), options_.topk_candidates_test);
    auto [top_scores, order] = scores.index_select(0, candidates).topk(k);
    candidates = candidates.index_select(0, order);
    const at::Tensor anchor_idx = candidates.div(num_classes, "floor");
    const at::Tensor boxes =
        box2box_.apply_deltas(predictions.deltas[level][image].index_select(0, anchor_idx),
                              anchors[level].tensor().index_select(0, anchor_idx));
    Instances found(image_size.first, image_size.second);
    found.set("pred_boxes", Boxes(boxes));
    found.set("scores", top_scores);
    found.set("pred_classes", candidates.remainder(num_classes));
    levels.push_back(std::move(found));
  }
  Instances all = Instances::cat(levels);
  at::Tensor keep = ops::batched_nms(all.boxes("pred_boxes").tensor(), all.tensor("scores"),
                                     all.tensor("pred_classes"), options_.nms_thresh_test);
  return all.index(keep.slice(0, 0, options_.detections_per_image));
}

std::vector<Instances> RetinaNet::inference(const std::vector<ModelInput>& batch) {
  TORCH_CHECK(!is_training(), "RetinaNet::inference needs eval mode (model->eval())");
  const structures::ImageList images = preprocess_image(batch);
  const std::vector<at::Tensor> features = head_features(backbone_->forward(images.tensor()));
  const DensePredictions predictions = predict(features);
  const std::vector<Boxes> anchors = anchor_generator_->forward(features);
  std::vector<Instances> out;
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto size = images.image_sizes()[i];
    Instances found = inference_single_image(anchors, predictions, static_cast<int64_t>(i), size);
    const int64_t h = batch[i].height > 0 ? batch[i].height : size.first;
    const int64_t w = batch[i].width > 0 ? batch[i].width : size.second;
    out.push_back(detector_postprocess(found, h, w));
  }
  return out;
}

std::shared_ptr<RetinaNet> build_retinanet(const config::CfgNode& cfg) {
  RetinaNetOptions options = retinanet_options_from_config(cfg);
  if (!cfg.get_string("MODEL.RETINANET.NORM").empty())
    throw Error("MODEL.RETINANET.NORM '" + cfg.get_string("MODEL.RETINANET.NORM") +
                "' is not supported yet (only '', no norm in the head)");
  auto backbone = build_backbone(cfg);
  const FeatureLevels levels =
      feature_levels(backbone->output_shape(), options.in_features, "MODEL.RETINANET.IN_FEATURES");
  auto anchor_generator = build_anchor_generator(cfg, levels.strides);
  RetinaNetHead head(
      RetinaNetHeadOptions(levels.channels, options.num_classes, anchor_generator->num_anchors())
          .num_convs(cfg.get_int("MODEL.RETINANET.NUM_CONVS"))
          .prior_prob(cfg.get_float("MODEL.RETINANET.PRIOR_PROB")));
  return std::make_shared<RetinaNet>(backbone, head, anchor_generator, std::move(options),
                                     cfg.get_float_list("MODEL.PIXEL_MEAN"),
                                     cfg.get_float_list("MODEL.PIXEL_STD"));
}

DETKIT_REGISTER_META_ARCH(RetinaNet, [](const config::CfgNode& cfg) {
  return std::static_pointer_cast<MetaArch>(build_retinanet(cfg));
});

}  // namespace detkit::modeling
