#pragma once
// Training-mode BatchNorm on maps in oneDNN's nChw16c layout ((N, C / 16, H, W, 16) contiguous
// float32 tensors; see blocked_conv2d_kernel.h): oneDNN's batch-normalization kernels. Internal
// to ops/: models go through ops/blocked_maps.h.
#include <ATen/core/Tensor.h>

#include <array>

namespace detkit::ops::cpu {

/// What the backward pass needs from the forward one: the batch's per-channel mean and biased
/// variance (C), as BatchNorm normalizes by, and with a fused ReLU which outputs it zeroed
/// (oneDNN's workspace, a bit per value; undefined without the ReLU).
struct BatchStatistics {
  at::Tensor mean, variance, relu_mask;
};

/// (x - mean) / sqrt(variance + eps) * weight + bias with the batch's statistics, which are
/// written to `stats`, followed by a ReLU if `relu` (in the same pass). x blocked, weight and
/// bias (C) -> blocked, as x.
at::Tensor blocked_batch_norm_forward(const at::Tensor& x, const at::Tensor& weight,
                                      const at::Tensor& bias, double eps, bool relu,
                                      BatchStatistics& stats);

/// blocked_batch_norm_forward's output again, from the statistics it wrote to `stats` (its ReLU
/// if `relu`): oneDNN's kernel given those statistics, the same values bit for bit. Nothing is
/// written to stats.
at::Tensor blocked_batch_norm_remake(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias, const BatchStatistics& stats,
                                     double eps, bool relu);

/// Gradients {x, weight, bias} of blocked_batch_norm_forward(x, weight, bias, eps, relu, stats)
/// for grad_output (blocked).
std::array<at::Tensor, 3> blocked_batch_norm_backward(const at::Tensor& grad_output,
                                                      const at::Tensor& x, const at::Tensor& weight,
                                                      const at::Tensor& bias,
                                                      const BatchStatistics& stats, double eps);

}  // namespace detkit::ops::cpu
