#pragma once
// A 3x3 convolution (stride 1, padding 1) by the Winograd F(4x4, 3x3) algorithm: oneDNN's
// kernels, which libtorch 1.13 never picks (it asks oneDNN for the direct algorithm). On an
// AVX-512 CPU they take 1.4-2.6x less time than the direct kernels for the maps of an FPN
// detector's heads and backbone (docs/BENCHMARKS.md); results differ from at::conv2d by
// rounding only (the transforms add and scale in float32; tests/ops/test_winograd_conv2d.cpp
// prints how much).
#include <ATen/core/Tensor.h>

namespace detkit::ops {

/// Whether winograd_conv2d runs this at::conv2d call and is expected to be faster: a float32 CPU
/// input stored NCHW or channels-last (the result and the input's gradient come in the same
/// layout, as at::conv2d's), a (O, C, 3, 3) weight, stride 1, padding 1, dilation 1, one group,
/// autocast off, a non-empty batch of maps of at least kWinogradMinMapPixels (H * W), and a CPU
/// for which oneDNN has the kernels (AVX-512; none on AVX2-only CPUs, where this is always false).
/// The choice does not depend on the batch size, so a batch split over ranks runs the same
/// kernels on each slice as one process on the whole batch (DATALOADER.WORLD_SIZE_INVARIANT).
/// Arguments as at::conv2d's (bias may be undefined).
bool winograd_conv2d_applies(const at::Tensor& input, const at::Tensor& weight,
                             const at::Tensor& bias, int64_t stride, int64_t padding,
                             int64_t dilation, int64_t groups);

/// Whether oneDNN has Winograd kernels on this CPU at all (AVX-512), probed once.
bool winograd_conv2d_available();

/// The smallest map (H * W) Winograd runs: 14 x 14, the mask and keypoint heads' ROI maps. Its
/// fixed cost per call (mostly the weight transform) is paid back from about 400 pixels per
/// batch (N * H * W; Intel Xeon with AVX-512, 2 threads, 64 to 512 channels: 1.2-2x faster from
/// ~800), so the FPN's coarsest levels (8 x 6 and below at 512 x 384) stay direct; a head that
/// sees a handful of 14 x 14 ROIs loses about a millisecond per conv.
constexpr int64_t kWinogradMinMapPixels = 14 * 14;

/// The geometry winograd_conv2d_applies asks for, whatever the maps' layout: a 3x3 kernel
/// (kernel_h x kernel_w), stride 1, padding 1, dilation 1, one group, a non-empty batch of n maps
/// of h x w, at least kWinogradMinMapPixels. Also the choice for blocked maps (blocked_maps.h).
bool winograd_geometry(int64_t kernel_h, int64_t kernel_w, int64_t stride, int64_t padding,
                       int64_t dilation, int64_t groups, int64_t n, int64_t h, int64_t w);

/// at::conv2d(input, weight, bias, 1, 1) by Winograd, differentiable with respect to all three
/// (no double backward). Requires winograd_conv2d_applies(input, weight, bias, 1, 1, 1, 1).
/// input (N, C, H, W), weight (O, C, 3, 3), bias (O) or undefined -> (N, O, H, W).
at::Tensor winograd_conv2d(const at::Tensor& input, const at::Tensor& weight,
                           const at::Tensor& bias);

}  // namespace detkit::ops
