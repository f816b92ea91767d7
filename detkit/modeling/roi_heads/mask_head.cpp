#include "detkit/modeling/roi_heads/mask_head.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include "detkit/layers/conv_transpose2d.h"
#include "detkit/layers/precision.h"
#include "detkit/ops/roi_align.h"
#include "detkit/utils/error.h"
#include "detkit/utils/event_scalars.h"

namespace detkit::modeling {

using structures::Instances;

MaskRCNNConvUpsampleHead::MaskRCNNConvUpsampleHead(const MaskRCNNConvUpsampleHeadOptions& o)
    : options_(o) {
  int64_t channels = o.input_channels;
  for (size_t k = 0; k < o.conv_dims.size(); ++k) {
    layers::Conv2d conv(layers::Conv2dOptions(channels, o.conv_dims[k], 3)
                            .padding(1)
                            .bias(o.norm.empty())
                            .norm(o.norm)
                            .relu(true));
    layers::c2_msra_fill(conv);
    convs_.push_back(register_module("mask_fcn" + std::to_string(k + 1), conv));
    channels = o.conv_dims[k];
  }
  deconv_ = register_module(
      "deconv", torch::nn::ConvTranspose2d(
                    torch::nn::ConvTranspose2dOptions(channels, o.deconv_channels, 2).stride(2)));
  const int64_t num_masks = o.cls_agnostic_mask ? 1 : o.num_classes;
  predictor_ = register_module(
      "predictor", layers::Conv2d(layers::Conv2dOptions(o.deconv_channels, num_masks, 1)));
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_normal_(deconv_->weight, 0.0, torch::kFanOut, torch::kReLU);
  deconv_->bias.zero_();
  torch::nn::init::normal_(predictor_->weight(), 0.0, 0.001);
  predictor_->bias().zero_();
}

at::Tensor MaskRCNNConvUpsampleHead::predict_logits(const at::Tensor& x) {
  at::Tensor y = x;
  for (auto& conv : convs_) y = conv->forward(y);
  y = layers::conv_transpose2d(deconv_, y).relu_();
  return predictor_->forward(y);
}

LossDict MaskRCNNConvUpsampleHead::forward(const at::Tensor& x, std::vector<Instances>& instances) {
  at::Tensor logits = predict_logits(x);
  if (is_training())
    return {{"loss_mask", mask_rcnn_loss(logits, instances) * options_.loss_weight}};
  mask_rcnn_inference(logits, instances);
  return {};
}

namespace {

// The mask targets of one image's proposals, (N, side, side) bool, as Detectron2's
// crop_and_resize: polygons rasterised in each box; bitmasks (INPUT.MASK_FORMAT bitmask) sampled
// by ROIAlign (aligned, adaptive sampling) and thresholded at 0.5.
at::Tensor mask_targets(const Instances::Field& gt_masks, const at::Tensor& boxes, int64_t side) {
  if (const auto* polygons = std::get_if<structures::PolygonMasks>(&gt_masks))
    return polygons->crop_and_resize(boxes, side);
  if (const auto* bitmasks = std::get_if<structures::BitMasks>(&gt_masks)) {
    const at::Tensor masks = bitmasks->tensor().to(boxes.device());
    const int64_t n = masks.size(0);
    TORCH_CHECK(boxes.size(0) == n, "gt_masks has ", n, " masks for ", boxes.size(0), " boxes");
    if (n == 0) return at::zeros({0, side, side}, masks.options().dtype(at::kBool));
    const at::Tensor rois =
        at::cat({at::arange(n, boxes.options()).unsqueeze(1), boxes.to(at::kFloat)}, 1);
    return ops::roi_align(masks.to(at::kFloat).unsqueeze(1), rois, 1.0, side, side, 0, true)
               .squeeze(1) >= 0.5;
  }
  TORCH_CHECK(false, "gt_masks must be PolygonMasks or BitMasks");
}

}  // namespace

at::Tensor mask_rcnn_loss(const at::Tensor& pred_mask_logits,
                          const std::vector<Instances>& instances) {
  const bool agnostic = pred_mask_logits.size(1) == 1;
  const int64_t side = pred_mask_logits.size(2);
  TORCH_CHECK(pred_mask_logits.size(2) == pred_mask_logits.size(3), "mask logits must be square");
  std::vector<at::Tensor> classes, masks;
  for (const auto& inst : instances) {
    if (inst.size() == 0) continue;
    if (!agnostic) classes.push_back(inst.tensor("gt_classes").to(at::kLong));
    masks.push_back(
        mask_targets(inst.get("gt_masks"), inst.boxes("proposal_boxes").tensor(), side));
  }
  if (masks.empty()) return pred_mask_logits.sum() * 0;
  at::Tensor targets = at::cat(masks).to(at::kFloat);
  at::Tensor logits =
      agnostic ? pred_mask_logits.select(1, 0)
               : pred_mask_logits.index({at::arange(pred_mask_logits.size(0),
                                                    pred_mask_logits.options().dtype(at::kLong)),
                                         at::cat(classes)});
  if (event_scalars_wanted()) {  // Detectron2's mask_rcnn/* scalars, over every mask pixel
    at::NoGradGuard no_grad;
    const at::Tensor gt = targets > 0.5;
    const at::Tensor incorrect = (logits > 0.0) != gt;
    const double pixels = static_cast<double>(incorrect.numel());
    const double positive = gt.sum().item<double>();
    put_event_scalar("mask_rcnn/accuracy",
                     1.0 - incorrect.sum().item<double>() / std::max(pixels, 1.0));
    put_event_scalar(
        "mask_rcnn/false_positive",
        (incorrect & gt.logical_not()).sum().item<double>() / std::max(pixels - positive, 1.0));
    put_event_scalar("mask_rcnn/false_negative",
                     (incorrect & gt).sum().item<double>() / std::max(positive, 1.0));
  }
  return at::binary_cross_entropy_with_logits(logits, targets);
}

void mask_rcnn_inference(const at::Tensor& mask_logits, std::vector<Instances>& instances) {
  const at::Tensor pred_mask_logits = layers::fp32_if_reduced(mask_logits);
  at::Tensor probs;
  if (pred_mask_logits.size(1) == 1) {
    probs = pred_mask_logits.sigmoid();
  } else {
    std::vector<at::Tensor> classes;
    for (const auto& inst : instances) classes.push_back(inst.tensor("pred_classes"));
    const at::TensorOptions index_options = pred_mask_logits.options().dtype(at::kLong);
    at::Tensor cls = classes.empty() ? at::zeros({0}, index_options) : at::cat(classes);
    probs = pred_mask_logits.index({at::arange(pred_mask_logits.size(0), index_options), cls})
                .unsqueeze(1)
                .sigmoid();
  }
  int64_t start = 0;
  for (auto& inst : instances) {
    inst.set("pred_masks", probs.narrow(0, start, inst.size()));
    start += inst.size();
  }
}

Registry<MaskHeadFactory>& mask_head_registry() {
  static Registry<MaskHeadFactory> registry("mask head (MODEL.ROI_MASK_HEAD.NAME)");
  return registry;
}

std::shared_ptr<MaskHead> build_mask_head(const config::CfgNode& cfg, int64_t input_channels) {
  return mask_head_registry().get(cfg.get_string("MODEL.ROI_MASK_HEAD.NAME"))(cfg, input_channels);
}

DETKIT_REGISTER_MASK_HEAD(MaskRCNNConvUpsampleHead, [](const config::CfgNode& cfg,
                                                       int64_t input_channels) {
  MaskRCNNConvUpsampleHeadOptions o;
  o.input_channels = input_channels;
  o.num_classes = cfg.get_int("MODEL.ROI_HEADS.NUM_CLASSES");
  const int64_t num_conv = cfg.get_int("MODEL.ROI_MASK_HEAD.NUM_CONV");
  if (num_conv < 0)
    throw Error("MODEL.ROI_MASK_HEAD.NUM_CONV must be 0 or more, got " + std::to_string(num_conv));
  o.deconv_channels = cfg.get_int("MODEL.ROI_MASK_HEAD.CONV_DIM");
  o.conv_dims.assign(num_conv, o.deconv_channels);
  o.norm = cfg.get_string("MODEL.ROI_MASK_HEAD.NORM");
  o.cls_agnostic_mask = cfg.get_bool("MODEL.ROI_MASK_HEAD.CLS_AGNOSTIC_MASK");
  return std::make_shared<MaskRCNNConvUpsampleHead>(o);
});

}  // namespace detkit::modeling
