#pragma once
// Deformable convolution, v1 (Dai et al. 2017) and v2 (modulated, Zhu et al. 2018), with the
// semantics of torchvision.ops.deform_conv2d, on which Detectron2's DeformConv and
// ModulatedDeformConv agree (layers/deform_conv.py).
#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <array>
#include <cstdint>
#include <tuple>

namespace detkit::ops {

/// A convolution whose taps sample the input at learned fractional displacements.
/// input: (N, C, H, W), float or double.
/// weight: (O, C / groups, kh, kw), input's dtype.
/// offset: (N, 2 * offset_groups * kh * kw, oh, ow); for offset group g, tap (i, j) and output
///   pixel (oy, ox), channel g * 2 * kh * kw + 2 * (i * kw + j) holds the row displacement dy and
///   the next channel the column displacement dx.
/// mask: absent for v1; for v2 (N, offset_groups * kh * kw, oh, ow), channel g * kh * kw + i * kw
///   + j scaling that tap's sample.
/// bias: absent or (O).
/// Input channel c belongs to offset group c / (C / offset_groups). The tap samples channel c at
/// y = oy * stride_h - pad_h + i * dilation_h + dy, x = ox * stride_w - pad_w + j * dilation_w + dx
/// by bilinear interpolation, corners outside the map counting 0 (so a point with y <= -1,
/// y >= H, x <= -1 or x >= W samples 0). groups splits input and output channels as in conv2d.
/// oh = (H + 2 * pad_h - dilation_h * (kh - 1) - 1) / stride_h + 1, ow likewise.
/// Returns (N, O, oh, ow). Differentiable with respect to input, weight, offset, mask and bias;
/// at a sampling coordinate of exactly -1 the offset's gradient is the one-sided slope from
/// inside, as torchvision's (Detectron2's CUDA kernel gives 0 there).
/// Throws c10::Error naming the argument whose shape, dtype or value is wrong.
at::Tensor deform_conv2d(const at::Tensor& input, const at::Tensor& weight,
                         const at::Tensor& offset, const c10::optional<at::Tensor>& mask,
                         const c10::optional<at::Tensor>& bias, int64_t stride_h, int64_t stride_w,
                         int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                         int64_t groups, int64_t offset_groups);

/// Gradients of sum(deform_conv2d(input, weight, offset, mask, bias, ...) * grad) with respect to
/// (input, weight, offset, mask, bias), in that order (deform_conv2d's argument order), each
/// shaped as its argument. grad: (N, O, oh, ow). Only those flagged in `output_mask` are computed;
/// the others are undefined, as is the mask's gradient without a mask. The bias's gradient does
/// not depend on the bias, so none is passed.
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> deform_conv2d_backward(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& weight,
    const at::Tensor& offset, const c10::optional<at::Tensor>& mask, int64_t stride_h,
    int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
    int64_t groups, int64_t offset_groups, std::array<bool, 5> output_mask);

}  // namespace detkit::ops
