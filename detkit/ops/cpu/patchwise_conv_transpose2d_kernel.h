#pragma once
// The gradients of detkit::patchwise_conv_transpose2d, as two matrix products over every pixel of
// every image (the forward's product, transposed). Internal to ops.
#include <ATen/core/Tensor.h>

#include <array>

#include "detkit/ops/cpu/conv_grads.h"

namespace detkit::ops::cpu {

/// The gradients of patchwise_conv_transpose2d(input, weight, bias) for grad_output (N, O, H*kh,
/// W*kw) in any memory format (channels-last, the forward's, costs the least): needed = {input,
/// weight, bias}. The input's gradient comes in the input's memory format.
ConvGrads patchwise_conv_transpose2d_backward(const at::Tensor& grad_output,
                                              const at::Tensor& input, const at::Tensor& weight,
                                              bool with_bias, std::array<bool, 3> needed);

}  // namespace detkit::ops::cpu
