#pragma once
// FrozenBatchNorm2d: BatchNorm with fixed statistics and affine parameters, all buffers (never
// trained), as Detectron2's. State-dict names: weight, bias, running_mean, running_var.
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <utility>

namespace detkit::layers {

class FrozenBatchNorm2dImpl : public torch::nn::Module {
 public:
  explicit FrozenBatchNorm2dImpl(int64_t num_features, double eps = 1e-5);
  /// x: (N, C, H, W) -> x * scale + shift, per channel.
  at::Tensor forward(const at::Tensor& x);
  int64_t num_features() const { return num_features_; }
  /// The per-channel (scale, shift) of forward's affine form, from the buffers.
  std::pair<at::Tensor, at::Tensor> scale_and_shift() const;

 private:
  int64_t num_features_;
  double eps_;
  at::Tensor weight_, bias_, running_mean_, running_var_;
};
TORCH_MODULE(FrozenBatchNorm2d);

}  // namespace detkit::layers
