#include "detkit/modeling/roi_heads/keypoint_head.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include <atomic>

#include "detkit/layers/conv_transpose2d.h"
#include "detkit/layers/precision.h"
#include "detkit/modeling/roi_heads/roi_heads.h"
#include "detkit/utils/error.h"
#include "detkit/utils/event_scalars.h"

namespace detkit::modeling {

using structures::Boxes;
using structures::Instances;

KRCNNConvDeconvUpsampleHead::KRCNNConvDeconvUpsampleHead(
    const KRCNNConvDeconvUpsampleHeadOptions& o)
    : options_(o) {
  if (o.num_keypoints <= 0)
    throw Error("MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS must be positive, got " +
                std::to_string(o.num_keypoints));
  int64_t channels = o.input_channels;
  for (size_t k = 0; k < o.conv_dims.size(); ++k) {
    layers::Conv2d conv(layers::Conv2dOptions(channels, o.conv_dims[k], 3).padding(1).relu(true));
    layers::c2_msra_fill(conv);  // Detectron2: kaiming normal (fan_out, ReLU) weights, zero bias
    convs_.push_back(register_module("conv_fcn" + std::to_string(k + 1), conv));
    channels = o.conv_dims[k];
  }
  score_lowres_ = register_module(
      "score_lowres",
      torch::nn::ConvTranspose2d(
          torch::nn::ConvTranspose2dOptions(channels, o.num_keypoints, 4).stride(2).padding(1)));
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_normal_(score_lowres_->weight, 0.0, torch::kFanOut, torch::kReLU);
  score_lowres_->bias.zero_();
}

at::Tensor KRCNNConvDeconvUpsampleHead::predict_logits(const at::Tensor& x) {
  at::Tensor y = x;
  for (auto& conv : convs_) y = conv->forward(y);
  y = layers::conv_transpose2d(score_lowres_, y);
  return at::upsample_bilinear2d(y, {2 * y.size(2), 2 * y.size(3)}, /*align_corners=*/false, 2.0,
                                 2.0);
}

LossDict KRCNNConvDeconvUpsampleHead::forward(const at::Tensor& x,
                                              std::vector<Instances>& instances) {
  at::Tensor logits = predict_logits(x);
  if (is_training()) {
    std::optional<double> normalizer;
    if (options_.loss_normalizer)
      normalizer = static_cast<double>(instances.size()) * *options_.loss_normalizer;
    return {{"loss_keypoint",
             keypoint_rcnn_loss(logits, instances, normalizer) * options_.loss_weight}};
  }
  keypoint_rcnn_inference(logits, instances);
  return {};
}

std::pair<at::Tensor, at::Tensor> keypoints_to_heatmap(const at::Tensor& keypoints,
                                                       const at::Tensor& rois, int64_t side) {
  if (rois.numel() == 0) {
    const at::TensorOptions options = rois.options().dtype(at::kLong);
    return {at::zeros({0}, options), at::zeros({0}, options)};
  }
  const double size = static_cast<double>(side);
  at::Tensor offset_x = rois.select(1, 0).unsqueeze(1), offset_y = rois.select(1, 1).unsqueeze(1);
  // Python's `int / tensor` is reciprocal(tensor) * int: the same float32 rounding here.
  at::Tensor scale_x = ((rois.select(1, 2) - rois.select(1, 0)).reciprocal() * size).unsqueeze(1);
  at::Tensor scale_y = ((rois.select(1, 3) - rois.select(1, 1)).reciprocal() * size).unsqueeze(1);
  at::Tensor x = keypoints.select(2, 0), y = keypoints.select(2, 1);
  at::Tensor x_boundary = x == rois.select(1, 2).unsqueeze(1);
  at::Tensor y_boundary = y == rois.select(1, 3).unsqueeze(1);
  at::Tensor xi = ((x - offset_x) * scale_x).floor().to(at::kLong);
  at::Tensor yi = ((y - offset_y) * scale_y).floor().to(at::kLong);
  xi.masked_fill_(x_boundary, side - 1);
  yi.masked_fill_(y_boundary, side - 1);
  at::Tensor valid_loc = (xi >= 0) & (yi >= 0) & (xi < side) & (yi < side);
  at::Tensor valid = (valid_loc & (keypoints.select(2, 2) > 0)).to(at::kLong);
  return {(yi * side + xi) * valid, valid};
}

namespace {
// Detectron2's kpts_num_skipped_batches: batches without a visible keypoint in any sampled ROI,
// counted over the process's life (its _TOTAL_SKIPPED), recorded unsmoothed.
at::Tensor skipped_batch(const at::Tensor& pred_keypoint_logits) {
  static std::atomic<int64_t> total_skipped{0};
  put_event_scalar("kpts_num_skipped_batches", static_cast<double>(++total_skipped),
                   /*smoothing_hint=*/false);
  return pred_keypoint_logits.sum() * 0;
}
}  // namespace

at::Tensor keypoint_rcnn_loss(const at::Tensor& pred_keypoint_logits,
                              const std::vector<Instances>& instances,
                              std::optional<double> normalizer) {
  const int64_t side = pred_keypoint_logits.size(2);
  std::vector<at::Tensor> heatmaps, valid;
  for (const auto& inst : instances) {
    if (inst.size() == 0) continue;
    auto [h, v] = keypoints_to_heatmap(inst.tensor("gt_keypoints"),
                                       inst.boxes("proposal_boxes").tensor(), side);
    heatmaps.push_back(h.reshape(-1));
    valid.push_back(v.reshape(-1));
  }
  if (heatmaps.empty()) return skipped_batch(pred_keypoint_logits);
  at::Tensor targets = at::cat(heatmaps);
  at::Tensor keep = at::cat(valid).nonzero().select(1, 0);
  if (keep.numel() == 0) return skipped_batch(pred_keypoint_logits);
  const int64_t n = pred_keypoint_logits.size(0), k = pred_keypoint_logits.size(1);
  at::Tensor logits = pred_keypoint_logits.reshape({n * k, -1});
  at::Tensor loss = at::cross_entropy_loss(logits.index_select(0, keep),
                                           targets.index_select(0, keep), {}, at::Reduction::Sum);
  return loss / normalizer.value_or(static_cast<double>(keep.numel()));
}

at::Tensor heatmaps_to_keypoints(const at::Tensor& maps_in, const at::Tensor& rois_in) {
  at::NoGradGuard no_grad;
  const at::Tensor maps = maps_in.detach(), rois = rois_in.detach();
  at::Tensor offset_x = rois.select(1, 0), offset_y = rois.select(1, 1);
  at::Tensor widths = (rois.select(1, 2) - rois.select(1, 0)).clamp_min(1);
  at::Tensor heights = (rois.select(1, 3) - rois.select(1, 1)).clamp_min(1);
  at::Tensor widths_ceil = widths.ceil(), heights_ceil = heights.ceil();
  at::Tensor width_corrections = widths / widths_ceil;
  at::Tensor height_corrections = heights / heights_ceil;
  const int64_t num_rois = maps.size(0), num_keypoints = maps.size(1);
  at::Tensor xy_preds = at::zeros({rois.size(0), num_keypoints, 4}, maps.options());
  // Each box's upsampled size is read on the host (one sync for all, as Detectron2's int()).
  const at::Tensor heights_host = heights_ceil.cpu(), widths_host = widths_ceil.cpu();
  for (int64_t i = 0; i < num_rois; ++i) {
    const int64_t out_h = static_cast<int64_t>(heights_host[i].item<float>());
    const int64_t out_w = static_cast<int64_t>(widths_host[i].item<float>());
    at::Tensor roi_map = at::upsample_bicubic2d(maps.narrow(0, i, 1), {out_h, out_w},
                                                /*align_corners=*/false)
                             .select(0, 0);  // K x H x W
    auto [max_score, pos] = roi_map.reshape({num_keypoints, -1}).max(1);
    // Detectron2's score is the softmax over the box's H x W at the argmax, normalised over the
    // pooled heatmap's cells: exp(roi_map - max) / sum(exp(maps[i] - max)). At the argmax the
    // numerator is exp(0) = 1 exactly, so only the sum is computed (the same float32 bits,
    // without two passes over the full-resolution map).
    at::Tensor pool = (maps[i] - max_score.reshape({num_keypoints, 1, 1})).exp_();
    at::Tensor scores = pool.sum({1, 2}).reciprocal();
    at::Tensor x_int = pos.remainder(out_w);
    at::Tensor y_int = (pos - x_int).div(out_w, "floor");
    at::Tensor x = (x_int.to(at::kFloat) + 0.5) * width_corrections[i];
    at::Tensor y = (y_int.to(at::kFloat) + 0.5) * height_corrections[i];
    at::Tensor out = xy_preds[i];
    out.select(1, 0).copy_(x + offset_x[i]);
    out.select(1, 1).copy_(y + offset_y[i]);
    out.select(1, 2).copy_(max_score);
    out.select(1, 3).copy_(scores);
  }
  return xy_preds;
}

void keypoint_rcnn_inference(const at::Tensor& pred_keypoint_logits,
                             std::vector<Instances>& instances) {
  std::vector<at::Tensor> boxes;
  for (const auto& inst : instances) boxes.push_back(inst.boxes("pred_boxes").tensor());
  at::Tensor logits = layers::fp32_if_reduced(pred_keypoint_logits.detach());
  at::Tensor results = boxes.empty() ? at::zeros({0, logits.size(1), 4}, logits.options())
                                     : heatmaps_to_keypoints(logits, at::cat(boxes));
  at::Tensor xy_score =
      results.index_select(2, at::tensor({0, 1, 3}, results.options().dtype(at::kLong)));
  int64_t start = 0;
  for (auto& inst : instances) {
    inst.set("pred_keypoints", xy_score.narrow(0, start, inst.size()));
    inst.set("pred_keypoint_heatmaps", logits.narrow(0, start, inst.size()));
    start += inst.size();
  }
}

Instances select_proposals_with_visible_keypoints(const Instances& proposals) {
  if (proposals.size() == 0) return proposals;
  const at::Tensor& kp = proposals.tensor("gt_keypoints");
  at::Tensor boxes = proposals.boxes("proposal_boxes").tensor().unsqueeze(1);  // R x 1 x 4
  at::Tensor xs = kp.select(2, 0), ys = kp.select(2, 1);
  at::Tensor inside = (xs >= boxes.select(2, 0)) & (xs <= boxes.select(2, 2)) &
                      (ys >= boxes.select(2, 1)) & (ys <= boxes.select(2, 3));
  at::Tensor selection = (inside & (kp.select(2, 2) >= 1)).any(1);
  return proposals.index(selection.nonzero().select(1, 0));
}

LossDict forward_keypoint_branch(KeypointHead& keypoint_head, const ROIPooler& pooler,
                                 const std::vector<at::Tensor>& features,
                                 std::vector<Instances>& instances, bool training,
                                 int64_t num_classes) {
  std::vector<Boxes> boxes;
  if (!training) {
    for (const auto& inst : instances) boxes.push_back(inst.boxes("pred_boxes"));
    return keypoint_head.forward(pooler(features, boxes), instances);
  }
  std::vector<Instances> selected;
  double kept = 0, images = 0;  // Detectron2's mean skips images without foreground proposals
  for (const Instances& fg : select_foreground_proposals(instances, num_classes)) {
    selected.push_back(select_proposals_with_visible_keypoints(fg));
    boxes.push_back(selected.back().boxes("proposal_boxes"));
    if (fg.size() > 0) {
      kept += static_cast<double>(selected.back().size());
      images += 1;
    }
  }
  if (images > 0) put_event_scalar("keypoint_head/num_fg_samples", kept / images);
  return keypoint_head.forward(pooler(features, boxes), selected);
}

Registry<KeypointHeadFactory>& keypoint_head_registry() {
  static Registry<KeypointHeadFactory> registry("keypoint head (MODEL.ROI_KEYPOINT_HEAD.NAME)");
  return registry;
}

std::shared_ptr<KeypointHead> build_keypoint_head(const config::CfgNode& cfg,
                                                  int64_t input_channels) {
  return keypoint_head_registry().get(cfg.get_string("MODEL.ROI_KEYPOINT_HEAD.NAME"))(
      cfg, input_channels);
}

DETKIT_REGISTER_KEYPOINT_HEAD(KRCNNConvDeconvUpsampleHead, [](const config::CfgNode& cfg,
                                                              int64_t input_channels) {
  KRCNNConvDeconvUpsampleHeadOptions o;
  o.input_channels = input_channels;
  o.num_keypoints = cfg.get_int("MODEL.ROI_KEYPOINT_HEAD.NUM_KEYPOINTS");
  o.conv_dims = cfg.get_int_list("MODEL.ROI_KEYPOINT_HEAD.CONV_DIMS");
  o.loss_weight = cfg.get_float("MODEL.ROI_KEYPOINT_HEAD.LOSS_WEIGHT");
  if (!cfg.get_bool("MODEL.ROI_KEYPOINT_HEAD.NORMALIZE_LOSS_BY_VISIBLE_KEYPOINTS")) {
    o.loss_normalizer = static_cast<double>(o.num_keypoints) *
                        static_cast<double>(cfg.get_int("MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE")) *
                        cfg.get_float("MODEL.ROI_HEADS.POSITIVE_FRACTION");
  }
  return std::make_shared<KRCNNConvDeconvUpsampleHead>(o);
});

}  // namespace detkit::modeling
