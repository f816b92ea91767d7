#include "detkit/modeling/roi_heads/roi_heads.h"

#include <ATen/ATen.h>

#include <cmath>

#include "detkit/modeling/sampling.h"
#include "detkit/utils/error.h"
#include "detkit/utils/event_scalars.h"

namespace detkit::modeling {

using structures::Boxes;
using structures::Instances;

StandardROIHeads::StandardROIHeads(const StandardROIHeadsOptions& o, ROIPooler box_pooler,
                                   std::shared_ptr<BoxHead> box_head,
                                   FastRCNNOutputLayers box_predictor,
                                   std::optional<ROIPooler> mask_pooler,
                                   std::shared_ptr<MaskHead> mask_head,
                                   ROIBranch<KeypointHead> keypoint)
    : options_(o),
      matcher_(o.iou_thresholds, o.iou_labels, /*allow_low_quality_matches=*/false),
      box_pooler_(std::move(box_pooler)),
      box_head_(register_module("box_head", std::move(box_head))),
      box_predictor_(register_module("box_predictor", std::move(box_predictor))),
      mask_pooler_(std::move(mask_pooler)),
      mask_head_(mask_head ? register_module("mask_head", std::move(mask_head)) : nullptr),
      keypoint_pooler_(std::move(keypoint.pooler)),
      keypoint_head_(keypoint.head ? register_module("keypoint_head", std::move(keypoint.head))
                                   : nullptr) {}

std::vector<at::Tensor> select_features(const FeatureMap& features,
                                        const std::vector<std::string>& names) {
  std::vector<at::Tensor> out;
  for (const auto& name : names) {
    auto it = features.find(name);
    if (it == features.end()) throw Error("MODEL.ROI_HEADS.IN_FEATURES: no feature '" + name + "'");
    out.push_back(it->second);
  }
  return out;
}

std::vector<at::Tensor> StandardROIHeads::select(const FeatureMap& features) const {
  return select_features(features, options_.in_features);
}

std::vector<Instances> label_and_sample_proposals(std::vector<Instances> proposals,
                                                  const std::vector<Instances>& targets,
                                                  const Matcher& matcher,
                                                  const StandardROIHeadsOptions& options) {
  TORCH_CHECK(proposals.size() == targets.size(), "ROI heads: ", proposals.size(),
              " proposal lists for ", targets.size(), " targets");
  // Ground truth as extra proposals with a (practically) certain objectness, as Detectron2.
  const double gt_logit = std::log((1.0 - 1e-10) / (1 - (1.0 - 1e-10)));
  std::vector<Instances> sampled;
  double fg_samples = 0, bg_samples = 0;  // over the images, for Detectron2's event scalars
  for (size_t i = 0; i < proposals.size(); ++i) {
    const Instances& gt = targets[i];
    Instances props = proposals[i];
    if (options.proposal_append_gt) {
      Instances gt_props(props.image_height(), props.image_width());
      const Boxes& gt_boxes = gt.boxes("gt_boxes");
      gt_props.set("proposal_boxes", gt_boxes);
      gt_props.set("objectness_logits", at::full({gt_boxes.size()}, gt_logit,
                                                 gt_boxes.tensor().options().dtype(at::kFloat)));
      props = Instances::cat({props, gt_props});
    }
    MatchResult match =
        matcher(structures::pairwise_iou(gt.boxes("gt_boxes"), props.boxes("proposal_boxes")));
    const bool has_gt = gt.size() > 0;
    at::Tensor classes;
    if (has_gt) {
      classes = gt.tensor("gt_classes").to(at::kLong).index_select(0, match.matches);
      classes.masked_fill_(match.match_labels == 0, options.num_classes);
      classes.masked_fill_(match.match_labels == -1, -1);
    } else {
      classes = at::full({props.size()}, options.num_classes,
                         props.boxes("proposal_boxes").tensor().options().dtype(at::kLong));
    }
    SampledIndices s = subsample_labels(classes, options.batch_size_per_image,
                                        options.positive_fraction, options.num_classes,
                                        image_generator(i));
    fg_samples += static_cast<double>(s.pos_idx.numel());
    bg_samples += static_cast<double>(s.neg_idx.numel());
    at::Tensor idx = at::cat({s.pos_idx, s.neg_idx});
    Instances picked = props.index(idx);
    picked.set("gt_classes", classes.index_select(0, idx));
    if (has_gt) {
      Instances matched_gt = gt.index(match.matches.index_select(0, idx));
      for (const auto& name : gt.field_names())
        if (name.rfind("gt_", 0) == 0 && !picked.has(name)) picked.set(name, matched_gt.get(name));
    }
    sampled.push_back(std::move(picked));
  }
  if (!sampled.empty()) {
    put_event_scalar("roi_head/num_fg_samples", fg_samples / static_cast<double>(sampled.size()));
    put_event_scalar("roi_head/num_bg_samples", bg_samples / static_cast<double>(sampled.size()));
  }
  return sampled;
}

std::vector<Instances> StandardROIHeads::label_and_sample_proposals(
    std::vector<Instances> proposals, const std::vector<Instances>& targets) const {
  return modeling::label_and_sample_proposals(std::move(proposals), targets, matcher_, options_);
}

LossDict StandardROIHeads::forward_box_losses(const FeatureMap& features,
                                              const std::vector<Instances>& proposals) {
  std::vector<Boxes> boxes;
  for (const auto& p : proposals) boxes.push_back(p.boxes("proposal_boxes"));
  at::Tensor x = box_head_->forward(box_pooler_(select(features), boxes));
  return box_predictor_->losses(box_predictor_->forward(x), proposals);
}

std::vector<Instances> StandardROIHeads::forward_box_inference(
    const FeatureMap& features, const std::vector<Instances>& proposals) {
  std::vector<Boxes> boxes;
  for (const auto& p : proposals) boxes.push_back(p.boxes("proposal_boxes"));
  at::Tensor x = box_head_->forward(box_pooler_(select(features), boxes));
  return box_predictor_->inference(box_predictor_->forward(x), proposals);
}

std::vector<Instances> select_foreground_proposals(const std::vector<Instances>& proposals,
                                                   int64_t num_classes) {
  std::vector<Instances> fg;
  for (const auto& inst : proposals) {
    at::Tensor c = inst.tensor("gt_classes");
    fg.push_back(inst.index(((c != -1) & (c != num_classes)).nonzero().select(1, 0)));
  }
  return fg;
}

LossDict forward_mask_branch(MaskHead& mask_head, const ROIPooler& pooler,
                             const std::vector<at::Tensor>& features,
                             std::vector<Instances>& instances, bool training,
                             int64_t num_classes) {
  std::vector<Instances> fg;
  std::vector<Boxes> boxes;
  if (training) {
    fg = select_foreground_proposals(instances, num_classes);
    for (const auto& inst : fg) boxes.push_back(inst.boxes("proposal_boxes"));
  } else {
    for (const auto& inst : instances) boxes.push_back(inst.boxes("pred_boxes"));
  }
  std::vector<Instances>& target = training ? fg : instances;
  return mask_head.forward(pooler(features, boxes), target);
}

LossDict StandardROIHeads::forward_mask(const FeatureMap& features,
                                        std::vector<Instances>& instances) {
  if (!options_.mask_on) return {};
  return forward_mask_branch(*mask_head_, *mask_pooler_, select(features), instances, is_training(),
                             options_.num_classes);
}

LossDict StandardROIHeads::forward_keypoint(const FeatureMap& features,
                                            std::vector<Instances>& instances) {
  if (!options_.keypoint_on) return {};
  return forward_keypoint_branch(*keypoint_head_, *keypoint_pooler_, select(features), instances,
                                 is_training(), options_.num_classes);
}

ROIHeadsOutput StandardROIHeads::forward(const structures::ImageList& /*images*/,
                                         const FeatureMap& features,
                                         std::vector<Instances> proposals,
                                         const std::vector<Instances>* targets) {
  ROIHeadsOutput out;
  if (is_training()) {
    if (!targets) throw Error("ROI heads: training needs ground-truth instances");
    auto sampled = label_and_sample_proposals(std::move(proposals), *targets);
    out.losses = forward_box_losses(features, sampled);
    for (auto& [name, loss] : forward_mask(features, sampled)) out.losses[name] = loss;
    for (auto& [name, loss] : forward_keypoint(features, sampled)) out.losses[name] = loss;
    return out;
  }
  out.instances = forward_box_inference(features, proposals);
  forward_mask(features, out.instances);
  forward_keypoint(features, out.instances);
  return out;
}

StandardROIHeadsOptions standard_roi_heads_options_from_config(const config::CfgNode& cfg) {
  StandardROIHeadsOptions o;
  o.num_classes = cfg.get_int("MODEL.ROI_HEADS.NUM_CLASSES");
  o.batch_size_per_image = cfg.get_int("MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE");
  o.positive_fraction = cfg.get_float("MODEL.ROI_HEADS.POSITIVE_FRACTION");
  o.iou_thresholds = cfg.get_float_list("MODEL.ROI_HEADS.IOU_THRESHOLDS");
  o.iou_labels = cfg.get_int_list("MODEL.ROI_HEADS.IOU_LABELS");
  o.proposal_append_gt = cfg.get_bool("MODEL.ROI_HEADS.PROPOSAL_APPEND_GT");
  o.in_features = cfg.get_string_list("MODEL.ROI_HEADS.IN_FEATURES");
  o.mask_on = cfg.get_bool("MODEL.MASK_ON");
  o.keypoint_on = cfg.get_bool("MODEL.KEYPOINT_ON");
  return o;
}

Registry<ROIHeadsFactory>& roi_heads_registry() {
  static Registry<ROIHeadsFactory> registry("ROI heads (MODEL.ROI_HEADS.NAME)");
  return registry;
}

std::shared_ptr<ROIHeads> build_roi_heads(const config::CfgNode& cfg,
                                          const layers::ShapeSpecs& input_shapes) {
  return roi_heads_registry().get(cfg.get_string("MODEL.ROI_HEADS.NAME"))(cfg, input_shapes);
}

DETKIT_REGISTER_ROI_HEADS(StandardROIHeads, [](const config::CfgNode& cfg,
                                               const layers::ShapeSpecs& shapes) {
  const StandardROIHeadsOptions o = standard_roi_heads_options_from_config(cfg);
  FeatureLevels levels = feature_levels(shapes, o.in_features, "MODEL.ROI_HEADS.IN_FEATURES");
  ROIPooler box_pooler(pooler_options_from_config(cfg, "ROI_BOX_HEAD", levels.strides));
  const int64_t res = box_pooler.options().output_size;
  auto box_head = build_box_head(cfg, BoxHeadInput{levels.channels, res, res});
  FastRCNNOutputLayers predictor(fast_rcnn_options_from_config(cfg, box_head->output_size()));
  std::optional<ROIPooler> mask_pooler;
  std::shared_ptr<MaskHead> mask_head;
  if (o.mask_on) {
    mask_pooler.emplace(pooler_options_from_config(cfg, "ROI_MASK_HEAD", levels.strides));
    mask_head = build_mask_head(cfg, levels.channels);
  }
  return std::make_shared<StandardROIHeads>(
      o, box_pooler, box_head, predictor, mask_pooler, mask_head,
      keypoint_branch_from_config(cfg, o, levels));
});

ROIBranch<KeypointHead> keypoint_branch_from_config(const config::CfgNode& cfg,
                                                    const StandardROIHeadsOptions& options,
                                                    const FeatureLevels& levels) {
  ROIBranch<KeypointHead> keypoint;
  if (options.keypoint_on) {
    keypoint.pooler.emplace(pooler_options_from_config(cfg, "ROI_KEYPOINT_HEAD", levels.strides));
    keypoint.head = build_keypoint_head(cfg, levels.channels);
  }
  return keypoint;
}

}  // namespace detkit::modeling
