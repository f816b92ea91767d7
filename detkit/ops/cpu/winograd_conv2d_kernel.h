#pragma once
// oneDNN's Winograd F(4x4, 3x3) convolution kernels (AVX-512 CPUs) for a 3x3 kernel, stride 1,
// padding 1, dilation 1, one group, on float32 CPU maps stored NCHW or channels-last (results in
// the input's layout). Internal to ops/:
// models go through ops/winograd_conv2d.h, which adds autograd and the choice of algorithm.
#include <ATen/core/Tensor.h>

#include <array>

#include "detkit/ops/cpu/conv_grads.h"

namespace detkit::ops::cpu {

/// Whether oneDNN offers its Winograd kernels for this shape on this CPU (false on CPUs without
/// AVX-512, where oneDNN has none). The answer is cached per shape.
/// n: batch, c: input channels, o: output channels, h x w: the map (input and output size),
/// bias: whether the convolution adds one.
bool winograd_kernel_available(int64_t n, int64_t c, int64_t o, int64_t h, int64_t w, bool bias);

/// input (N, C, H, W), weight (O, C, 3, 3), bias (O) or undefined -> (N, O, H, W). Forward and
/// backward, a batch whose scratchpad would be large runs one image at a time
/// (conv_primitives.h).
at::Tensor winograd_conv2d_forward(const at::Tensor& input, const at::Tensor& weight,
                                   const at::Tensor& bias);

/// The bytes of oneDNN scratchpad the largest pass (forward or backward) of this shape would take
/// for the whole batch at once (above kScratchpadPerBatchBytes, the passes run image by image).
/// The shape must have Winograd kernels.
int64_t winograd_scratchpad_bytes(int64_t n, int64_t c, int64_t o, int64_t h, int64_t w, bool bias);

/// Gradients of winograd_conv2d_forward(input, weight, bias) for grad_output (N, O, H, W):
/// needed = {input, weight, bias}. oneDNN computes the weight's and the bias's in one pass.
ConvGrads winograd_conv2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                   const at::Tensor& weight, bool with_bias,
                                   std::array<bool, 3> needed);

}  // namespace detkit::ops::cpu
