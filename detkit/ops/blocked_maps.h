#pragma once
// Feature maps in oneDNN's nChw16c layout: a float32 (N, C, H, W) map held as a contiguous
// (N, C / 16, H, W, 16) tensor, sixteen channels innermost. It is the layout oneDNN's AVX-512
// convolution kernels compute in; libtorch's NCHW convolutions reorder every map into it and
// back (inputs, outputs and their gradients: 11 % of a Mask R-CNN R50-FPN training step,
// docs/BENCHMARKS.md). A ResNet keeps its maps blocked from its stem's convolution (which reads
// the NCHW images) to each stage's output, and an FPN on it to each level's: convolutions,
// BatchNorm and max pooling below run on oneDNN's kernels in this layout, FrozenBN's affine form
// and GroupNorm on detkit's, and element-wise ops (ReLU, the residual sum) as libtorch's on the
// 5-D tensors.
// All functions are differentiable (no double backward).
#include <ATen/core/Tensor.h>

namespace detkit::ops {

/// Whether this CPU runs blocked maps on oneDNN's JIT kernels: AVX-512, as Winograd needs.
bool blocked_maps_available();

/// Whether `x` is a blocked map: float32, 5-D, contiguous, 16 channels innermost.
bool is_blocked(const at::Tensor& x);

/// (N, C, H, W) float32, C a multiple of 16 -> its blocked map (N, C/16, H, W, 16): reordered
/// from channels-last storage directly, from any other through the contiguous form.
at::Tensor to_blocked(const at::Tensor& x);

/// A blocked map -> the (N, C, H, W) map it holds, stored contiguous or channels-last (`format`).
/// Its gradient comes back to the blocked layout from either storage.
at::Tensor from_blocked(const at::Tensor& x,
                        at::MemoryFormat format = at::MemoryFormat::Contiguous);

/// at::conv2d(input, weight, bias, stride, padding, dilation) (one group, square kernel) on a
/// blocked input, giving a blocked output; weight (O, C, k, k) with O a multiple of 16. 3x3
/// stride-1 convolutions on maps of kWinogradMinMapPixels and more run Winograd, as
/// winograd_conv2d_applies chooses for NCHW maps; the rest oneDNN's direct kernels, which
/// libtorch's at::conv2d also runs.
at::Tensor blocked_conv2d(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                          int64_t stride, int64_t padding, int64_t dilation);

/// blocked_conv2d on a plain (N, C, H, W) float32 input of any C (a network's first convolution,
/// on its images), giving a blocked output; the input's gradient, where it needs one, comes NCHW.
at::Tensor plain_to_blocked_conv2d(const at::Tensor& input, const at::Tensor& weight,
                                   const at::Tensor& bias, int64_t stride, int64_t padding,
                                   int64_t dilation);

/// Training-mode at::batch_norm on a blocked map: normalized by the batch's statistics, which
/// also update running_mean and running_var (C) as libtorch's does: r = (1 - momentum) * r +
/// momentum * s, with the unbiased variance. weight and bias (C) may be undefined (no affine),
/// running_mean and running_var too (no running statistics). With `relu`, at::relu of the result
/// in the same pass (forward and backward: no ReLU pass over the map, no ReLU output kept).
at::Tensor blocked_batch_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                              const at::Tensor& running_mean, const at::Tensor& running_var,
                              double momentum, double eps, bool relu = false);

/// A training BatchNorm's arguments to blocked_batch_norm (but relu).
struct BatchNormArgs {
  at::Tensor weight, bias, running_mean, running_var;
  double momentum, eps;
};

/// blocked_conv2d(blocked_batch_norm(x, norm..., relu = true), weight, bias, stride, padding,
/// dilation): the same values and gradients, but the convolution keeps for its backward pass not
/// the normalized map it reads but what remakes it (x and the batch's statistics, which the
/// BatchNorm keeps anyway), and normalizes x again there (oneDNN's kernel given the statistics:
/// the same values bit for bit). One map fewer held from the forward pass to the backward one,
/// for one more BatchNorm pass (memory-bound, a few ms) in the backward one. A map whose
/// statistics are not finite runs the two ops apart.
at::Tensor blocked_batch_norm_relu_conv2d(const at::Tensor& x, const BatchNormArgs& norm,
                                          const at::Tensor& weight, const at::Tensor& bias,
                                          int64_t stride, int64_t padding, int64_t dilation);

/// blocked_batch_norm(blocked_batch_norm_relu_conv2d(x, norm, weight, bias, stride, padding,
/// dilation), out_norm..., relu = false): a ResNet bottleneck's last convolution and its
/// BatchNorm, after the BatchNorm and ReLU before them. The same values and gradients, but
/// neither the normalized map nor the convolution's output is kept for the backward pass: both
/// are remade there (the convolution run again: a 1x1 one in a bottleneck, a few GFLOP). Two maps
/// fewer held from the forward pass to the backward one; a non-finite statistic runs the ops
/// apart.
at::Tensor blocked_batch_norm_relu_conv2d_batch_norm(const at::Tensor& x, const BatchNormArgs& norm,
                                                     const at::Tensor& weight,
                                                     const at::Tensor& bias, int64_t stride,
                                                     int64_t padding, int64_t dilation,
                                                     const BatchNormArgs& out_norm);

/// at::upsample_nearest2d(x, 2H x 2W) of a blocked map: every pixel copied to a 2 x 2 square.
at::Tensor blocked_upsample_nearest2x(const at::Tensor& x);

/// at::max_pool2d(x, kernel, stride, padding) of a blocked map (square window, no dilation, floor
/// mode). Backward sends each window's gradient to its maximum; where a window holds the maximum
/// twice, oneDNN picks which, and libtorch may pick the other. A map holding a NaN runs
/// at::max_pool2d, which returns it as its window's maximum (oneDNN's kernel would skip it).
at::Tensor blocked_max_pool2d(const at::Tensor& x, int64_t kernel, int64_t stride, int64_t padding);

/// x * scale + shift per channel (scale, shift: (C) float32) on a blocked map, then at::relu if
/// `relu`: an inference-mode BatchNorm, as FrozenBatchNorm2d's affine form. One pass forward and
/// one backward, with libtorch's roundings (bit-identical to x * scale + shift and at::relu);
/// differentiable in x, and in scale and shift where they require grad (through libtorch's ops).
at::Tensor blocked_channel_affine(const at::Tensor& x, const at::Tensor& scale,
                                  const at::Tensor& shift, bool relu = false);

/// at::group_norm(x, groups, weight, bias, eps) on a blocked map, then at::relu if `relu` (in
/// the same pass, forward and backward). weight and bias (C) both defined or both not. Statistics
/// summed in double (libtorch sums in float: values agree to float32 rounding); a NaN makes its
/// group NaN, as libtorch's does.
at::Tensor blocked_group_norm(const at::Tensor& x, int64_t groups, const at::Tensor& weight,
                              const at::Tensor& bias, double eps, bool relu = false);

}  // namespace detkit::ops
