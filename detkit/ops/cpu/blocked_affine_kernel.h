#pragma once
// A per-channel affine map with an optional ReLU on nChw16c maps ((N, C / 16, H, W, 16)
// contiguous float32 tensors), in one pass each way: FrozenBatchNorm2d (and an eval-mode
// BatchNorm) on blocked maps. Internal to ops/: models go through ops/blocked_maps.h.
#include <ATen/core/Tensor.h>

namespace detkit::ops::cpu {

/// y = x * scale + shift per channel (scale, shift: (C) float32, or (N * C), image by image),
/// then max(y, 0) if `relu`: the same roundings as libtorch's mul, add and relu (no contraction;
/// NaN stays NaN).
at::Tensor blocked_affine_forward(const at::Tensor& x, const at::Tensor& scale,
                                  const at::Tensor& shift, bool relu);

/// The gradient with respect to x of blocked_affine_forward, given its output y (read only with
/// `relu`: where y is not positive the gradient is 0, as libtorch's threshold_backward gives):
/// grad * scale per channel.
at::Tensor blocked_affine_backward(const at::Tensor& grad, const at::Tensor& y,
                                   const at::Tensor& scale, bool relu);

}  // namespace detkit::ops::cpu
