#pragma once
// The blocks of a ResNet stage, with Detectron2's child names (conv1, conv2, conv3, shortcut).
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include "detkit/layers/conv2d.h"
#include "detkit/layers/deform_conv.h"

namespace detkit::modeling {

struct BlockOptions {
  int64_t in_channels = 0, out_channels = 0, stride = 1;
  int64_t bottleneck_channels = 0, num_groups = 1, dilation = 1;  // bottlenecks only
  bool stride_in_1x1 = false;                                     // bottlenecks only
  std::string norm = "FrozenBN";
  // Deformable bottlenecks only (MODEL.RESNETS.DEFORM_MODULATED, DEFORM_NUM_GROUPS).
  bool deform_modulated = false;
  int64_t deform_num_groups = 1;
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

/// A bottleneck whose 3x3 is deformable (Detectron2's DeformBottleneckBlock): "conv2_offset", a
/// 3x3 conv with bias (zero-initialised), predicts from conv1's output the offsets (18 channels
/// per deformable group) and, when modulated (v2), 9 more per group whose sigmoid is the mask;
/// "conv2" is the DeformConv / ModulatedDeformConv with the norm.
class DeformBottleneckBlockImpl : public torch::nn::Module {
 public:
  explicit DeformBottleneckBlockImpl(const BlockOptions& o);
  at::Tensor forward(const at::Tensor& x);

 private:
  bool modulated_;
  int64_t offset_channels_;  // 18 * deformable groups
  layers::Conv2d conv1_{nullptr}, conv2_offset_{nullptr}, conv3_{nullptr}, shortcut_{nullptr};
  layers::DeformConv2d conv2_{nullptr};
};
TORCH_MODULE(DeformBottleneckBlock);

}  // namespace detkit::modeling
