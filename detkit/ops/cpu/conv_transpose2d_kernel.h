#pragma once
// oneDNN's deconvolution kernels for the gradients of a 2-D transposed convolution (square
// kernel, stride and padding, no output padding, dilation 1, one group) on contiguous float32
// NCHW CPU tensors and PyTorch's (C, O, k, k) weights. libtorch 1.13 computes them on its im2col +
// GEMM path (slow_conv_transpose2d_backward). Internal to ops/: models go through
// ops/onednn_conv_transpose2d.h.
#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

#include "detkit/ops/cpu/conv_grads.h"

namespace detkit::ops::cpu {

/// One transposed convolution's shape: input (n, c, h, w), c -> o channels, a k x k kernel.
struct ConvTransposeShape {
  int64_t n, c, o, h, w, kernel, stride, padding;
  bool bias;
  std::array<int64_t, 9> values() const { return {n, c, o, h, w, kernel, stride, padding, bias}; }
  int64_t out_h() const { return (h - 1) * stride - 2 * padding + kernel; }
  int64_t out_w() const { return (w - 1) * stride - 2 * padding + kernel; }
};

/// Whether oneDNN has JIT (not reference) kernels for both gradients of the shape on this CPU,
/// and the reorders to and from PyTorch's layouts. Cached per shape.
bool conv_transpose_kernel_available(const ConvTransposeShape& shape);

/// Gradients of at::conv_transpose2d(input (N, C, H, W), weight (C, O, k, k), bias (O), stride,
/// padding) for grad_output (N, O, out_h, out_w): needed = {input, weight, bias}. oneDNN computes
/// the weight's and the bias's in one pass.
ConvGrads conv_transpose2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                    const at::Tensor& weight, int64_t stride, int64_t padding,
                                    bool with_bias, std::array<bool, 3> needed);

}  // namespace detkit::ops::cpu
