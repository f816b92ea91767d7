#pragma once
// RetinaNetHead, as Detectron2's: two subnets of NUM_CONVS (3x3 conv + ReLU), shared by every
// feature level, then cls_score (A * K logits per position) and bbox_pred (A * 4 deltas).
// Names: cls_subnet.{0,2,4,6}, bbox_subnet.{0,2,4,6}, cls_score, bbox_pred. Convs start from
// N(0, 0.01) weights and zero biases; cls_score's bias is -log((1 - p) / p) for the prior p.
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>

#include <utility>
#include <vector>

#include "detkit/layers/conv2d.h"

namespace detkit::modeling {

struct RetinaNetHeadOptions {
  RetinaNetHeadOptions(int64_t in_channels, int64_t num_classes, int64_t num_anchors)
      : in_channels_(in_channels), num_classes_(num_classes), num_anchors_(num_anchors) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, num_classes);  // K
  TORCH_ARG(int64_t, num_anchors);  // A, per position
  TORCH_ARG(int64_t, num_convs) = 4;
  TORCH_ARG(double, prior_prob) = 0.01;
};

class RetinaNetHeadImpl : public torch::nn::Module {
 public:
  explicit RetinaNetHeadImpl(const RetinaNetHeadOptions& options);
  /// features: one (N, C, Hi, Wi) map per level. Returns per level the class logits
  /// (N, A * K, Hi, Wi) and the box deltas (N, A * 4, Hi, Wi); channel a * K + k is anchor a's
  /// class k.
  std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> forward(
      const std::vector<at::Tensor>& features);

  const RetinaNetHeadOptions& options() const { return options_; }

 private:
  RetinaNetHeadOptions options_;
  torch::nn::Sequential cls_subnet_, bbox_subnet_;
  layers::Conv2d cls_score_{nullptr}, bbox_pred_{nullptr};
};
TORCH_MODULE(RetinaNetHead);

}  // namespace detkit::modeling
