#pragma once
// A 2-D transposed convolution whose gradients come from oneDNN's deconvolution kernels. libtorch
// 1.13 runs at::conv_transpose2d on CPU through im2col and a GEMM (slow_conv_transpose2d) both
// ways; oneDNN's JIT kernels compute the two backward passes 3-6x faster for the mask and keypoint
// heads' upsampling, while its forward pass is no faster than libtorch's (bench/conv_algorithms),
// so the forward stays at::conv_transpose2d, bit for bit. The gradients differ from libtorch's by
// float32 rounding only (tests/ops/test_onednn_conv_transpose2d.cpp prints how much).
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace detkit::ops {

/// Whether onednn_conv_transpose2d can run this at::conv_transpose2d call: a non-empty float32,
/// contiguous NCHW CPU input, a contiguous (C, O, k, k) weight, the same stride and padding on
/// both axes, no output padding, dilation 1, one group, autocast off, and a JIT kernel of
/// oneDNN's for both gradients of the shape on this CPU (and the reorders to and from PyTorch's
/// layouts).
/// Arguments as at::conv_transpose2d's (bias may be undefined).
bool onednn_conv_transpose2d_applies(const at::Tensor& input, const at::Tensor& weight,
                                     const at::Tensor& bias, at::IntArrayRef stride,
                                     at::IntArrayRef padding, at::IntArrayRef output_padding,
                                     at::IntArrayRef dilation, int64_t groups);

/// at::conv_transpose2d(input, weight, bias, stride, padding), differentiable with respect to all
/// three on oneDNN's kernels (no double backward). Requires onednn_conv_transpose2d_applies.
/// input (N, C, H, W), weight (C, O, k, k), bias (O) or undefined
///   -> (N, O, (H - 1) * stride - 2 * padding + k, (W - 1) * stride - 2 * padding + k).
at::Tensor onednn_conv_transpose2d(const at::Tensor& input, const at::Tensor& weight,
                                   const at::Tensor& bias, int64_t stride, int64_t padding);

}  // namespace detkit::ops
