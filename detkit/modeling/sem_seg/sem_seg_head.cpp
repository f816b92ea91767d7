#include "detkit/modeling/sem_seg/sem_seg_head.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "detkit/utils/error.h"

namespace detkit::modeling {

namespace {

/// F.interpolate(x, scale_factor=s, mode="bilinear", align_corners=False): the output size
/// floor(in * s), and the source coordinate from the scale itself (as PyTorch does when given a
/// scale factor).
at::Tensor upsample_bilinear_by(const at::Tensor& x, int64_t scale) {
  const double s = static_cast<double>(scale);
  return at::upsample_bilinear2d(x, {x.size(2) * scale, x.size(3) * scale},
                                 /*align_corners=*/false, s, s);
}

}  // namespace

SemSegFPNHead::SemSegFPNHead(const SemSegFPNHeadOptions& options,
                             const layers::ShapeSpecs& input_shapes)
    : options_(options) {
  if (options_.in_features.empty())
    throw Error("MODEL.SEM_SEG_HEAD.IN_FEATURES is empty: SemSegFPNHead needs a feature");
  if (options_.common_stride <= 0)
    throw Error(fmt::format("MODEL.SEM_SEG_HEAD.COMMON_STRIDE is {}: it must be positive",
                            options_.common_stride));
  struct Input {
    std::string name;
    layers::ShapeSpec shape;
  };
  std::vector<Input> inputs;
  for (const auto& name : options_.in_features) {
    auto it = input_shapes.find(name);
    if (it == input_shapes.end()) {
      std::string have;
      for (const auto& [n, _] : input_shapes) have += (have.empty() ? "" : ", ") + n;
      throw Error(fmt::format(
          "MODEL.SEM_SEG_HEAD.IN_FEATURES: the backbone has no feature '{}' (it has {})", name,
          have));
    }
    const int64_t stride = it->second.stride;
    const double steps = std::log2(static_cast<double>(stride) / options_.common_stride);
    if (stride % options_.common_stride != 0 || steps != std::floor(steps))
      throw Error(fmt::format(
          "MODEL.SEM_SEG_HEAD.IN_FEATURES: feature '{}' has stride {}, which 2x upsamplings "
          "cannot bring to MODEL.SEM_SEG_HEAD.COMMON_STRIDE {}",
          name, stride, options_.common_stride));
    inputs.push_back({name, it->second});
  }
  std::stable_sort(inputs.begin(), inputs.end(),
                   [](const Input& a, const Input& b) { return a.shape.stride < b.shape.stride; });
  const bool with_norm = !options_.norm.empty();
  for (const auto& input : inputs) {
    ScaleHead head{input.name, {}, input.shape.stride != options_.common_stride};
    auto holder = register_module(input.name, std::make_shared<torch::nn::Module>());
    const int64_t length = std::max<int64_t>(
        1, static_cast<int64_t>(std::log2(static_cast<double>(input.shape.stride)) -
                                std::log2(static_cast<double>(options_.common_stride))));
    for (int64_t k = 0; k < length; ++k) {
      layers::Conv2d conv(layers::Conv2dOptions(k == 0 ? input.shape.channels : options_.conv_dims,
                                                options_.conv_dims, 3)
                              .padding(1)
                              .bias(!with_norm)
                              .norm(options_.norm)
                              .relu(true));
      layers::c2_msra_fill(conv);
      // Detectron2's nn.Sequential numbers the upsamplings too: convs at 0, 2, 4 when upsampling.
      holder->register_module(std::to_string(head.upsample ? 2 * k : k), conv);
      head.convs.push_back(conv);
    }
    scale_heads_.push_back(std::move(head));
  }
  predictor_ = register_module("predictor", layers::Conv2d(layers::Conv2dOptions(
                                                options_.conv_dims, options_.num_classes, 1)));
  layers::c2_msra_fill(predictor_);
}

at::Tensor SemSegFPNHead::layers(const structures::FeatureMap& features) {
  at::Tensor sum;
  for (auto& head : scale_heads_) {
    auto it = features.find(head.feature);
    if (it == features.end())
      throw Error("SemSegFPNHead: the features have no '" + head.feature +
                  "' (MODEL.SEM_SEG_HEAD.IN_FEATURES)");
    at::Tensor x = it->second;
    for (auto& conv : head.convs) {
      x = conv->forward(x);
      if (head.upsample) x = upsample_bilinear_by(x, 2);
    }
    sum = sum.defined() ? sum + x : x;
  }
  return predictor_->forward(sum);
}

at::Tensor SemSegFPNHead::predict(const structures::FeatureMap& features) {
  return upsample_bilinear_by(layers(features), options_.common_stride);
}

structures::LossDict SemSegFPNHead::losses(const structures::FeatureMap& features,
                                           const at::Tensor& targets) {
  // In fp32 whatever autocast gave the head, as Detectron2 (PyTorch issue 48163).
  const at::Tensor logits =
      upsample_bilinear_by(layers(features).to(at::kFloat), options_.common_stride);
  const at::Tensor loss = at::cross_entropy_loss(logits, targets, /*weight=*/{},
                                                 at::Reduction::Mean, options_.ignore_value);
  return {{"loss_sem_seg", loss * options_.loss_weight}};
}

SemSegFPNHeadOptions sem_seg_fpn_head_options(const config::CfgNode& cfg) {
  SemSegFPNHeadOptions o;
  o.in_features = cfg.get_string_list("MODEL.SEM_SEG_HEAD.IN_FEATURES");
  o.num_classes = cfg.get_int("MODEL.SEM_SEG_HEAD.NUM_CLASSES");
  o.conv_dims = cfg.get_int("MODEL.SEM_SEG_HEAD.CONVS_DIM");
  o.common_stride = cfg.get_int("MODEL.SEM_SEG_HEAD.COMMON_STRIDE");
  o.norm = cfg.get_string("MODEL.SEM_SEG_HEAD.NORM");
  o.loss_weight = cfg.get_float("MODEL.SEM_SEG_HEAD.LOSS_WEIGHT");
  o.ignore_value = cfg.get_int("MODEL.SEM_SEG_HEAD.IGNORE_VALUE");
  if (o.num_classes <= 0)
    throw Error(
        fmt::format("MODEL.SEM_SEG_HEAD.NUM_CLASSES is {}: it must be positive", o.num_classes));
  if (o.conv_dims <= 0)
    throw Error(
        fmt::format("MODEL.SEM_SEG_HEAD.CONVS_DIM is {}: it must be positive", o.conv_dims));
  return o;
}

Registry<SemSegHeadFactory>& sem_seg_head_registry() {
  static Registry<SemSegHeadFactory> registry(
      "semantic segmentation head (MODEL.SEM_SEG_HEAD.NAME)");
  return registry;
}

std::shared_ptr<SemSegHead> build_sem_seg_head(const config::CfgNode& cfg,
                                               const layers::ShapeSpecs& input_shapes) {
  return sem_seg_head_registry().get(cfg.get_string("MODEL.SEM_SEG_HEAD.NAME"))(cfg, input_shapes);
}

DETKIT_REGISTER_SEM_SEG_HEAD(SemSegFPNHead, [](const config::CfgNode& cfg,
                                               const layers::ShapeSpecs& input_shapes) {
  return std::static_pointer_cast<SemSegHead>(
      std::make_shared<SemSegFPNHead>(sem_seg_fpn_head_options(cfg), input_shapes));
});

at::Tensor sem_seg_postprocess(const at::Tensor& logits, std::pair<int64_t, int64_t> image_size,
                               int64_t height, int64_t width) {
  const at::Tensor cropped =
      logits.slice(1, 0, image_size.first).slice(2, 0, image_size.second).unsqueeze(0);
  return at::upsample_bilinear2d(cropped, {height, width}, /*align_corners=*/false).squeeze(0);
}

at::Tensor pad_sem_seg_targets(const std::vector<structures::ModelInput>& batch,
                               std::pair<int64_t, int64_t> padded_size, int64_t ignore_value,
                               const c10::Device& device, const std::string& model) {
  at::Tensor targets =
      at::full({static_cast<int64_t>(batch.size()), padded_size.first, padded_size.second},
               ignore_value, at::TensorOptions().dtype(at::kLong).device(device));
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto& input = batch[i];
    if (!input.sem_seg || !input.sem_seg->defined())
      throw Error(model + ": the training input " + input.file_name +
                  " has no semantic-segmentation target (sem_seg: its dataset needs "
                  "sem_seg_file_name, as a *_panoptic_separated dataset gives)");
    const at::Tensor& t = *input.sem_seg;
    if (t.dim() != 2 || t.size(0) > padded_size.first || t.size(1) > padded_size.second)
      throw Error(fmt::format(
          "{}: the semantic target of {} has shape {}, not (H, W) within the "
          "batch's padded size {}x{}",
          model, input.file_name, c10::str(t.sizes()), padded_size.first, padded_size.second));
    targets[static_cast<int64_t>(i)]
        .slice(0, 0, t.size(0))
        .slice(1, 0, t.size(1))
        .copy_(t.to(device, at::kLong));
  }
  return targets;
}

}  // namespace detkit::modeling
