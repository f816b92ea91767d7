#pragma once
// StandardRPNHead: a shared 3x3 conv (+ReLU) then 1x1 convs predicting, per anchor, an
// objectness logit and box deltas, on every feature map. Detectron2's child names: "conv",
// "objectness_logits", "anchor_deltas".
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <utility>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/layers/conv2d.h"

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

class StandardRPNHeadImpl : public torch::nn::Module {
 public:
  explicit StandardRPNHeadImpl(const StandardRPNHeadOptions& options);
  /// features: L maps (N, C, Hi, Wi). Returns L objectness maps (N, A, Hi, Wi) and L delta maps
  /// (N, A * box_dim, Hi, Wi).
  std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> forward(
      const std::vector<at::Tensor>& features);

 private:
  std::vector<layers::Conv2d> convs_;
  layers::Conv2d objectness_logits_{nullptr}, anchor_deltas_{nullptr};
};
TORCH_MODULE(StandardRPNHead);

}  // namespace detkit::modeling
