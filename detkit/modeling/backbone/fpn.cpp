#include "detkit/modeling/backbone/fpn.h"

#include <ATen/ATen.h>

#include <cmath>

#include "detkit/modeling/backbone/resnet.h"
#include "detkit/utils/error.h"

namespace detkit::modeling {

using layers::Conv2d;
using layers::Conv2dOptions;

FPNOptions fpn_options_from_config(const config::CfgNode& cfg) {
  return FPNOptions()
      .in_features(cfg.get_string_list("MODEL.FPN.IN_FEATURES"))
      .out_channels(cfg.get_int("MODEL.FPN.OUT_CHANNELS"))
      .norm(cfg.get_string("MODEL.FPN.NORM"))
      .fuse_type(cfg.get_string("MODEL.FPN.FUSE_TYPE"));
}

FPN::FPN(std::shared_ptr<Backbone> bottom_up, const FPNOptions& o)
    : bottom_up_(std::move(bottom_up)), options_(o) {
  if (o.top_block() != "max_pool" && o.top_block() != "p6p7" && !o.top_block().empty())
    throw Error("FPN top block must be 'max_pool', 'p6p7' or none, got '" + o.top_block() + "'");
  if (o.fuse_type() != "sum" && o.fuse_type() != "avg")
    throw Error("MODEL.FPN.FUSE_TYPE must be 'sum' or 'avg', got '" + o.fuse_type() + "'");
  if (o.in_features().empty()) throw Error("MODEL.FPN.IN_FEATURES must not be empty");
  const auto input_shapes = bottom_up_->output_shape();
  const bool use_bias = o.norm().empty();
  int64_t previous_stride = 0;
  for (const auto& name : o.in_features()) {
    auto it = input_shapes.find(name);
    if (it == input_shapes.end())
      throw Error("MODEL.FPN.IN_FEATURES: the backbone has no feature '" + name + "'");
    const auto& shape = it->second;
    if (shape.stride <= previous_stride)
      throw Error("MODEL.FPN.IN_FEATURES must have increasing strides");
    previous_stride = shape.stride;
    int64_t stage = std::lround(std::log2(double(shape.stride)));
    Conv2d lateral(
        Conv2dOptions(shape.channels, o.out_channels(), 1).bias(use_bias).norm(o.norm()));
    Conv2d output(Conv2dOptions(o.out_channels(), o.out_channels(), 3)
                      .padding(1)
                      .bias(use_bias)
                      .norm(o.norm()));
    c2_xavier_fill(lateral);
    c2_xavier_fill(output);
    lateral_convs_.push_back(register_module("fpn_lateral" + std::to_string(stage), lateral));
    output_convs_.push_back(register_module("fpn_output" + std::to_string(stage), output));
    out_names_.push_back("p" + std::to_string(stage));
    shapes_[out_names_.back()] = {o.out_channels(), shape.stride};
  }
  size_divisibility_ = previous_stride;
  const int64_t levels = o.top_block() == "p6p7" ? 2 : o.top_block() == "max_pool" ? 1 : 0;
  if (o.top_block() == "p6p7") {
    int64_t in_channels = 0;
    if (input_shapes.count(o.top_block_in_feature())) {
      in_channels = input_shapes.at(o.top_block_in_feature()).channels;
    } else if (shapes_.count(o.top_block_in_feature())) {
      in_channels = o.out_channels();
    } else {
      throw Error("FPN top block P6/P7: no feature '" + o.top_block_in_feature() + "'");
    }
    auto conv = [&](int64_t in) {
      Conv2d c(Conv2dOptions(in, o.out_channels(), 3).stride(2).padding(1));
      c2_xavier_fill(c);
      return c;
    };
    auto top_block = register_module("top_block", std::make_shared<torch::nn::Module>());
    p6_ = top_block->register_module("p6", conv(in_channels));
    p7_ = top_block->register_module("p7", conv(o.out_channels()));
  }
  for (int64_t level = 0; level < levels; ++level) {
    int64_t stage = std::stoll(out_names_.back().substr(1)) + 1;
    out_names_.push_back("p" + std::to_string(stage));
    shapes_[out_names_.back()] = {o.out_channels(), int64_t{1} << stage};
  }
  // Registered after the FPN convs and the top block, as in Detectron2, so state dicts list
  // entries in its order.
  register_module("bottom_up", bottom_up_);
}

FeatureMap FPN::forward(const at::Tensor& images) {
  FeatureMap bottom = bottom_up_->forward(images);
  const auto& in = options_.in_features();
  const size_t n = in.size();
  std::vector<at::Tensor> results(n);
  at::Tensor prev = lateral_convs_[n - 1]->forward(bottom.at(in[n - 1]));
  results[n - 1] = output_convs_[n - 1]->forward(prev);
  for (size_t i = n - 1; i-- > 0;) {
    const at::Tensor& x = bottom.at(in[i]);
    at::Tensor top_down = at::upsample_nearest2d(prev, {prev.size(2) * 2, prev.size(3) * 2});
    prev = lateral_convs_[i]->forward(x) + top_down;
    if (options_.fuse_type() == "avg") prev = prev / 2;
    results[i] = output_convs_[i]->forward(prev);
  }
  FeatureMap out;
  for (size_t i = 0; i < n; ++i) out[out_names_[i]] = results[i];
  if (options_.top_block() == "max_pool")
    out[out_names_.back()] = at::max_pool2d(results[n - 1], {1, 1}, {2, 2}, {0, 0});
  if (options_.top_block() == "p6p7") {
    auto in = bottom.find(options_.top_block_in_feature());
    at::Tensor p6 =
        p6_->forward(in != bottom.end() ? in->second : out.at(options_.top_block_in_feature()));
    out[out_names_[n]] = p6;
    out[out_names_[n + 1]] = p7_->forward(at::relu(p6));
  }
  return out;
}

DETKIT_REGISTER_BACKBONE(build_resnet_fpn_backbone, [](const config::CfgNode& cfg,
                                                       int64_t in_channels) {
  auto bottom_up = std::make_shared<ResNet>(resnet_options_from_config(cfg, in_channels));
  return std::make_shared<FPN>(bottom_up, fpn_options_from_config(cfg));
});

// RetinaNet's: P3-P5 from res3-res5 (MODEL.FPN.IN_FEATURES), P6/P7 from res5.
DETKIT_REGISTER_BACKBONE(build_retinanet_resnet_fpn_backbone, [](const config::CfgNode& cfg,
                                                                 int64_t in_channels) {
  auto bottom_up = std::make_shared<ResNet>(resnet_options_from_config(cfg, in_channels));
  return std::make_shared<FPN>(
      bottom_up, fpn_options_from_config(cfg).top_block("p6p7").top_block_in_feature("res5"));
});

// The same with P6/P7 from P5 (torchvision's retinanet_resnet50_fpn, FCOS).
DETKIT_REGISTER_BACKBONE(build_retinanet_resnet_fpn_p5_backbone, [](const config::CfgNode& cfg,
                                                                    int64_t in_channels) {
  auto bottom_up = std::make_shared<ResNet>(resnet_options_from_config(cfg, in_channels));
  return std::make_shared<FPN>(
      bottom_up, fpn_options_from_config(cfg).top_block("p6p7").top_block_in_feature("p5"));
});

}  // namespace detkit::modeling
