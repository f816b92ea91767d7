#pragma once
// Max pooling for training on maps in oneDNN's nChw16c layout ((N, C / 16, H, W, 16) contiguous
// float32 tensors): oneDNN's pooling kernels, the position of each window's maximum kept in
// oneDNN's workspace for the backward pass. Internal to ops/: models go through
// ops/blocked_maps.h.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace detkit::ops::cpu {

/// A square window: at::max_pool2d(x, kernel, stride, padding) without dilation or ceil mode.
struct PoolWindow {
  int64_t kernel, stride, padding;
  int64_t out_size(int64_t in) const { return (in + 2 * padding - kernel) / stride + 1; }
};

/// The maximum of each window of blocked x -> blocked; `workspace` receives where each maximum
/// came from (bytes, oneDNN's format), for the backward pass.
at::Tensor blocked_max_pool2d_forward(const at::Tensor& x, const PoolWindow& window,
                                      at::Tensor& workspace);

/// The gradient of blocked_max_pool2d_forward with respect to its (N, C, H, W) input (`sizes`,
/// the logical ones): each window's gradient goes to its maximum's position, summed where
/// windows overlap. grad_output blocked -> blocked.
at::Tensor blocked_max_pool2d_backward(const at::Tensor& grad_output, at::IntArrayRef sizes,
                                       const PoolWindow& window, const at::Tensor& workspace);

}  // namespace detkit::ops::cpu
