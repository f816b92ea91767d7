#pragma once
// GroupNorm on nChw16c maps ((N, C / 16, H, W, 16) contiguous float32 tensors; see
// blocked_conv2d_kernel.h), with an optional ReLU: detkit's kernels (oneDNN 2 has no group
// normalization). Per-channel sums in double over each image's pixels, combined per group; the
// normalization is then a per-image, per-channel affine map. Internal to ops/: models go through
// ops/blocked_maps.h.
#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

namespace detkit::ops::cpu {

/// Each (image, group)'s mean and 1 / sqrt(biased variance + eps): (N, G) float32.
struct GroupStatistics {
  at::Tensor mean, rstd;
};

/// at::group_norm(x, groups, weight, bias, eps), then max(y, 0) if `relu`, on a blocked map;
/// the statistics go to `stats`. weight and bias (C) may be undefined (1 and 0). C divisible by
/// `groups`.
at::Tensor blocked_group_norm_forward(const at::Tensor& x, int64_t groups, const at::Tensor& weight,
                                      const at::Tensor& bias, double eps, bool relu,
                                      GroupStatistics& stats);

/// Gradients {x, weight, bias} of blocked_group_norm_forward(x, groups, weight, bias, eps, relu,
/// stats) for grad_output, given its output y (read only with `relu`: no gradient where y is not
/// positive). The weight's and bias's are undefined where `weight` is.
std::array<at::Tensor, 3> blocked_group_norm_backward(const at::Tensor& grad_output,
                                                      const at::Tensor& x, const at::Tensor& y,
                                                      int64_t groups, const at::Tensor& weight,
                                                      const GroupStatistics& stats, bool relu);

}  // namespace detkit::ops::cpu
