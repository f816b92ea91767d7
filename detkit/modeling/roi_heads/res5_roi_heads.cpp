#include "detkit/modeling/roi_heads/res5_roi_heads.h"

#include <ATen/ATen.h>

#include "detkit/modeling/backbone/resnet_blocks.h"
#include "detkit/utils/error.h"

namespace detkit::modeling {

using structures::Boxes;
using structures::Instances;

Res5ROIHeads::Res5ROIHeads(const StandardROIHeadsOptions& o, ROIPooler pooler,
                           torch::nn::Sequential res5, FastRCNNOutputLayers box_predictor,
                           std::shared_ptr<MaskHead> mask_head)
    : options_(o),
      matcher_(o.iou_thresholds, o.iou_labels, /*allow_low_quality_matches=*/false),
      pooler_(std::move(pooler)),
      res5_(register_module("res5", std::move(res5))),
      box_predictor_(register_module("box_predictor", std::move(box_predictor))),
      mask_head_(mask_head ? register_module("mask_head", std::move(mask_head)) : nullptr) {}

at::Tensor Res5ROIHeads::shared_roi_transform(const FeatureMap& features,
                                              const std::vector<Boxes>& boxes) {
  return res5_->forward(pooler_(select_features(features, options_.in_features), boxes));
}

ROIHeadsOutput Res5ROIHeads::forward(const structures::ImageList& /*images*/,
                                     const FeatureMap& features, std::vector<Instances> proposals,
                                     const std::vector<Instances>* targets) {
  ROIHeadsOutput out;
  if (is_training()) {
    if (!targets) throw Error("ROI heads: training needs ground-truth instances");
    proposals = label_and_sample_proposals(std::move(proposals), *targets, matcher_, options_);
  }
  std::vector<Boxes> boxes;
  for (const auto& p : proposals) boxes.push_back(p.boxes("proposal_boxes"));
  const at::Tensor box_features = shared_roi_transform(features, boxes);
  const auto predictions = box_predictor_->forward(box_features.mean({2, 3}));
  if (is_training()) {
    out.losses = box_predictor_->losses(predictions, proposals);
    if (mask_head_) {
      // The foreground proposals' rows of the shared features, in proposal order.
      std::vector<at::Tensor> masks;
      std::vector<Instances> foreground;
      for (const auto& p : proposals) {
        const at::Tensor c = p.tensor("gt_classes");
        masks.push_back((c != -1) & (c != options_.num_classes));
        foreground.push_back(p.index(masks.back().nonzero().select(1, 0)));
      }
      const at::Tensor mask_features = box_features.index({at::cat(masks)});
      for (auto& [name, loss] : mask_head_->forward(mask_features, foreground))
        out.losses[name] = loss;
    }
    return out;
  }
  out.instances = box_predictor_->inference(predictions, proposals);
  if (mask_head_) {
    std::vector<Boxes> detected;
    for (const auto& inst : out.instances) detected.push_back(inst.boxes("pred_boxes"));
    mask_head_->forward(shared_roi_transform(features, detected), out.instances);
  }
  return out;
}

torch::nn::Sequential build_res5_block(const config::CfgNode& cfg, int64_t* out_channels) {
  constexpr int64_t kStageChannelFactor = 8;  // res5 has 8x res2's channels
  const auto& deform = cfg.get("MODEL.RESNETS.DEFORM_ON_PER_STAGE").as_list();
  if (!deform.empty() && deform.back().as_bool())
    throw Error(
        "MODEL.RESNETS.DEFORM_ON_PER_STAGE: deformable convolutions in the res5 of "
        "Res5ROIHeads are not supported (as in Detectron2)");
  BlockOptions bo;
  bo.num_groups = cfg.get_int("MODEL.RESNETS.NUM_GROUPS");
  bo.bottleneck_channels =
      bo.num_groups * cfg.get_int("MODEL.RESNETS.WIDTH_PER_GROUP") * kStageChannelFactor;
  bo.out_channels = cfg.get_int("MODEL.RESNETS.RES2_OUT_CHANNELS") * kStageChannelFactor;
  bo.stride_in_1x1 = cfg.get_bool("MODEL.RESNETS.STRIDE_IN_1X1");
  bo.norm = cfg.get_string("MODEL.RESNETS.NORM");
  torch::nn::Sequential res5;
  for (int64_t b = 0; b < 3; ++b) {
    bo.in_channels = b == 0 ? bo.out_channels / 2 : bo.out_channels;
    bo.stride = b == 0 ? 2 : 1;
    res5->push_back(BottleneckBlock(bo));
  }
  *out_channels = bo.out_channels;
  return res5;
}

DETKIT_REGISTER_ROI_HEADS(Res5ROIHeads, [](const config::CfgNode& cfg,
                                           const layers::ShapeSpecs& shapes) {
  const StandardROIHeadsOptions o = standard_roi_heads_options_from_config(cfg);
  if (o.keypoint_on) throw Error("Res5ROIHeads has no keypoint head (MODEL.KEYPOINT_ON True)");
  if (o.in_features.size() != 1)
    throw Error("Res5ROIHeads pools one feature map; MODEL.ROI_HEADS.IN_FEATURES has " +
                std::to_string(o.in_features.size()));
  const FeatureLevels levels = feature_levels(shapes, o.in_features, "MODEL.ROI_HEADS.IN_FEATURES");
  ROIPooler pooler(pooler_options_from_config(cfg, "ROI_BOX_HEAD", levels.strides));
  int64_t channels = 0;
  torch::nn::Sequential res5 = build_res5_block(cfg, &channels);
  FastRCNNOutputLayers predictor(fast_rcnn_options_from_config(cfg, channels));
  std::shared_ptr<MaskHead> mask_head = o.mask_on ? build_mask_head(cfg, channels) : nullptr;
  return std::make_shared<Res5ROIHeads>(o, pooler, res5, predictor, mask_head);
});

}  // namespace detkit::modeling
