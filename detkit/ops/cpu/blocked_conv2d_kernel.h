#pragma once
// Convolutions on maps stored in oneDNN's nChw16c layout, held as (N, C / 16, H, W, 16)
// contiguous float32 tensors: the layout oneDNN's AVX-512 convolution kernels read and write, so
// a chain of them (a ResNet's blocks) runs without the NCHW <-> nChw16c reorders libtorch's
// oneDNN path makes around every call. Internal to ops/: models go through ops/blocked_maps.h.
#include <ATen/core/Tensor.h>

#include <array>

#include "detkit/ops/cpu/conv_grads.h"

namespace detkit::ops::cpu {

/// A 2-D convolution's square kernel geometry (one group).
struct ConvGeometry {
  int64_t stride = 1, padding = 0, dilation = 1;
  bool winograd = false;  // oneDNN's Winograd F(4x4, 3x3) kernels (3x3, stride 1, padding 1)
  int64_t out_size(int64_t in, int64_t kernel) const {
    return (in + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1;
  }
};

/// input (N, C/16, H, W, 16) blocked, or (N, C, H, W) contiguous (a network's first
/// convolution, on images: any C), weight (O, C, k, k) contiguous, bias (O) or undefined ->
/// (N, O/16, OH, OW, 16) blocked. O a multiple of 16.
at::Tensor blocked_conv2d_forward(const at::Tensor& input, const at::Tensor& weight,
                                  const at::Tensor& bias, const ConvGeometry& geometry);

/// Gradients of blocked_conv2d_forward for grad_output (blocked, as its result): needed = {input,
/// weight, bias}, the input's in the input's layout; grad_output is reordered at most once for both
/// passes (it is not, in oneDNN's layout).
ConvGrads blocked_conv2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                  const at::Tensor& weight, bool with_bias,
                                  const ConvGeometry& geometry, std::array<bool, 3> needed);

}  // namespace detkit::ops::cpu
