#pragma once
// RPN heads, chosen by MODEL.RPN.HEAD_NAME (Detectron2's RPN_HEAD_REGISTRY): the RPNHead
// interface the RPN holds, and StandardRPNHead: a shared 3x3 conv (+ReLU) then 1x1 convs
// predicting, per anchor, an objectness logit and box deltas, on every feature map. Detectron2's
// child names: "conv", "objectness_logits", "anchor_deltas".
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/layers/conv2d.h"
#include "detkit/utils/registry.h"

namespace detkit::modeling {

struct StandardRPNHeadOptions {
  StandardRPNHeadOptions(int64_t in_channels, int64_t num_anchors)
      : in_channels_(in_channels), num_anchors_(num_anchors) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, num_anchors);  // per location
  TORCH_ARG(int64_t, box_dim) = 4;
  /// Hidden conv widths; -1 means in_channels. One entry: a single conv named "conv"; more: a
  /// sequence "conv.conv0", "conv.conv1", ...
  TORCH_ARG(std::vector<int64_t>, conv_dims) = std::vector<int64_t>{-1};
};

class RPNHead : public torch::nn::Module {
 public:
  /// features: L maps (N, C, Hi, Wi). Returns L objectness maps (N, A, Hi, Wi) and L delta maps
  /// (N, A * box_dim, Hi, Wi).
  virtual std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> forward(
      const std::vector<at::Tensor>& features) = 0;
};

/// Builds a head for feature maps of `in_channels` channels and `num_anchors` anchors per
/// location of `box_dim` coordinates (what the anchor generator makes).
using RPNHeadFactory = std::function<std::shared_ptr<RPNHead>(
    const config::CfgNode& cfg, int64_t in_channels, int64_t num_anchors, int64_t box_dim)>;
Registry<RPNHeadFactory>& rpn_head_registry();

#define DETKIT_REGISTER_RPN_HEAD(name, ...) \
  DETKIT_REGISTER(::detkit::modeling::rpn_head_registry(), #name, __VA_ARGS__)

/// The head MODEL.RPN.HEAD_NAME names.
std::shared_ptr<RPNHead> build_rpn_head(const config::CfgNode& cfg, int64_t in_channels,
                                        int64_t num_anchors, int64_t box_dim);

class StandardRPNHeadImpl : public RPNHead {
 public:
  explicit StandardRPNHeadImpl(const StandardRPNHeadOptions& options);
  std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> forward(
      const std::vector<at::Tensor>& features) override;

 private:
  std::vector<layers::Conv2d> convs_;
  layers::Conv2d objectness_logits_{nullptr}, anchor_deltas_{nullptr};
};
TORCH_MODULE(StandardRPNHead);

}  // namespace detkit::modeling
