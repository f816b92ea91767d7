#pragma once
// A transposed convolution whose stride equals its kernel, without padding: each input pixel
// writes its own k x k patch of the output, so the whole op is one matrix product, (N*H*W, C) x
// (C, k*k*O), and a reordering of its result into (N, O, H*k, W*k). libtorch 1.13's CPU kernel
// (slow_conv_transpose2d) runs a small GEMM and a single-threaded col2im per image instead: the
// mask head's 2x2 upsampling. Its gradients are two matrix products on the same (pixel, patch)
// matrix of the output's gradient (ops/autograd/patchwise_conv_transpose2d.cpp). Results differ
// from at::conv_transpose2d's by float32 rounding only (tests/ops/test_patchwise_conv_transpose2d.cpp
// prints how much).
#include <ATen/core/Tensor.h>

namespace detkit::ops {

/// Whether patchwise_conv_transpose2d runs this at::conv_transpose2d call: a non-empty float32 or
/// float64 CPU input (N, C, H, W), a (C, O, kh, kw) weight, stride (kh, kw), no padding, no output
/// padding, dilation 1, one group, autocast off. Arguments as at::conv_transpose2d's (bias may be
/// undefined).
bool patchwise_conv_transpose2d_applies(const at::Tensor& input, const at::Tensor& weight,
                                        const at::Tensor& bias, at::IntArrayRef stride,
                                        at::IntArrayRef padding, at::IntArrayRef output_padding,
                                        at::IntArrayRef dilation, int64_t groups);

/// at::conv_transpose2d(input, weight, bias, stride = (kh, kw)), as one matrix product: input
/// (N, C, H, W) in either memory format (channels-last costs no copy), weight (C, O, kh, kw), bias
/// (O) or undefined -> (N, O, H * kh, W * kw), channels-last. Requires
/// patchwise_conv_transpose2d_applies's geometry.
/// Through the dispatcher (detkit::patchwise_conv_transpose2d), so profiles and the FLOP counter
/// see it as one op.
at::Tensor patchwise_conv_transpose2d(const at::Tensor& input, const at::Tensor& weight,
                                      const at::Tensor& bias);

}  // namespace detkit::ops
