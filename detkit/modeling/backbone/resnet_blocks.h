#pragma once
// The blocks of a ResNet stage, with Detectron2's child names (conv1, conv2, conv3, shortcut).
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "detkit/layers/conv2d.h"

namespace detkit::modeling {

struct BlockOptions {
  int64_t in_channels = 0, out_channels = 0, stride = 1;
  int64_t bottleneck_channels = 0, num_groups = 1, dilation = 1;  // bottlenecks only
  bool stride_in_1x1 = false;                                     // bottlenecks only
  std::string norm = "FrozenBN";
};

/// Stem: 7x7 conv, stride 2 ("conv1", with norm) -> ReLU -> 3x3 max pool, stride 2.
class BasicStemImpl : public torch::nn::Module {
 public:
  BasicStemImpl(int64_t in_channels, int64_t out_channels, const std::string& norm);
  at::Tensor forward(const at::Tensor& x);

 private:
  layers::Conv2d conv1_{nullptr};
};
TORCH_MODULE(BasicStem);

/// Two 3x3 convs (ResNet-18/34).
class BasicBlockImpl : public torch::nn::Module {
 public:
  explicit BasicBlockImpl(const BlockOptions& o);
  at::Tensor forward(const at::Tensor& x);

 private:
  layers::Conv2d conv1_{nullptr}, conv2_{nullptr}, shortcut_{nullptr};
};
TORCH_MODULE(BasicBlock);

/// 1x1 -> 3x3 (grouped for ResNeXt) -> 1x1 (ResNet-50/101/152).
class BottleneckBlockImpl : public torch::nn::Module {
 public:
  explicit BottleneckBlockImpl(const BlockOptions& o);
  at::Tensor forward(const at::Tensor& x);

 private:
  layers::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr}, shortcut_{nullptr};
};
TORCH_MODULE(BottleneckBlock);

}  // namespace detkit::modeling
