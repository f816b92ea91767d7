#pragma once
// Detectron2's DeformConv and ModulatedDeformConv layers (layers/deform_conv.py): a deformable
// 3x3 (or any size) convolution over ops::deform_conv2d with an optional norm and ReLU, its
// parameter "weight" (and "bias" when asked) and the norm as the child "norm", so state-dict
// names read "res3.0.conv2.weight", "res3.0.conv2.norm.running_mean" as Detectron2's.
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/pimpl.h>

#include <string>

namespace detkit::layers {

struct DeformConv2dOptions {
  DeformConv2dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(int64_t, kernel_size);
  TORCH_ARG(int64_t, stride) = 1;
  TORCH_ARG(int64_t, padding) = 0;
  TORCH_ARG(int64_t, dilation) = 1;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(int64_t, deformable_groups) = 1;  // offset groups
  TORCH_ARG(bool, modulated) = false;         // v2 (ModulatedDeformConv): forward takes a mask
  TORCH_ARG(bool, bias) = false;              // Detectron2's default for both layers
  TORCH_ARG(std::string, norm) = "";          // see make_norm()
  TORCH_ARG(bool, relu) = false;              // ReLU after the norm
};

class DeformConv2dImpl : public torch::nn::Module {
 public:
  explicit DeformConv2dImpl(const DeformConv2dOptions& options);
  /// x: (N, C, H, W); offset: (N, 2 * deformable_groups * k * k, oh, ow); mask (modulated only):
  /// (N, deformable_groups * k * k, oh, ow), already through a sigmoid. Then the norm and ReLU.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& offset,
                     const at::Tensor& mask = at::Tensor());

  const DeformConv2dOptions& options() const { return options_; }
  at::Tensor& weight() { return weight_; }
  at::Tensor& bias() { return bias_; }

 private:
  DeformConv2dOptions options_;
  at::Tensor weight_, bias_;
  torch::nn::AnyModule norm_;
};
TORCH_MODULE(DeformConv2d);

/// c2_msra_fill for the deformable layer (what Detectron2's DeformBottleneckBlock applies to it).
void c2_msra_fill(DeformConv2d& conv);

}  // namespace detkit::layers
