#include "detkit/layers/frozen_batch_norm.h"

#include <ATen/ATen.h>

namespace detkit::layers {

FrozenBatchNorm2dImpl::FrozenBatchNorm2dImpl(int64_t num_features, double eps)
    : num_features_(num_features), eps_(eps) {
  weight_ = register_buffer("weight", at::ones({num_features}));
  bias_ = register_buffer("bias", at::zeros({num_features}));
  running_mean_ = register_buffer("running_mean", at::zeros({num_features}));
  running_var_ = register_buffer("running_var", at::ones({num_features}) - eps);
}

at::Tensor FrozenBatchNorm2dImpl::forward(const at::Tensor& x) {
  TORCH_CHECK(x.dim() == 4 && x.size(1) == num_features_, "FrozenBatchNorm2d(", num_features_,
              ") needs (N, ", num_features_, ", H, W) input, got ", x.sizes());
  if (x.requires_grad()) {  // the affine form: differentiable w.r.t. x only
    auto [scale, shift] = scale_and_shift();
    return x * scale.reshape({1, -1, 1, 1}) + shift.reshape({1, -1, 1, 1});
  }
  return at::batch_norm(x, weight_, bias_, running_mean_, running_var_, /*training=*/false, 0.0,
                        eps_, /*cudnn_enabled=*/false);
}

std::pair<at::Tensor, at::Tensor> FrozenBatchNorm2dImpl::scale_and_shift() const {
  at::Tensor scale = weight_ * (running_var_ + eps_).rsqrt();
  return {scale, bias_ - running_mean_ * scale};
}

}  // namespace detkit::layers
