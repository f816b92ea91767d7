#pragma once
// ROIAlign (Mask R-CNN): bilinear pooling of box regions from a feature map, with the semantics of
// torchvision.ops.roi_align (aligned = true is Detectron2's ROIAlignV2).
#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <vector>

namespace detkit::ops {

/// Pools every box of `rois` from `input` into a pooled_height x pooled_width grid of bins; each
/// bin is the mean of sampling_ratio^2 bilinear samples of the map.
/// input: (N, C, H, W), float or double.
/// rois: (K, 5) rows [batch_index, x1, y1, x2, y2] in image coordinates, input's dtype.
/// spatial_scale: feature-map pixels per image pixel (1 / stride).
/// sampling_ratio: samples per bin side; 0 = adaptive, ceil(roi side / pooled side) per box.
/// aligned: true shifts box corners by -0.5 pixel (pixel centres at +0.5, ROIAlignV2); false is
///   the legacy ROIAlign, which also stretches boxes smaller than one pixel to one pixel.
/// Returns (K, C, pooled_height, pooled_width). Differentiable with respect to `input` (not rois).
/// Throws c10::Error naming the roi when its batch index is outside [0, N) or a corner is not
/// finite (torchvision reads out of bounds or loops on those).
at::Tensor roi_align(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                     int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                     bool aligned);

/// Gradient of roi_align with respect to its input, for the same rois and settings.
/// grad: (K, C, pooled_height, pooled_width), the gradient of the loss with respect to the output.
/// Returns (batch_size, channels, height, width).
at::Tensor roi_align_backward(const at::Tensor& grad, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
                              int64_t channels, int64_t height, int64_t width,
                              int64_t sampling_ratio, bool aligned);

/// roi_align over a feature pyramid: roi k pools from features[levels[k]] at
/// spatial_scales[levels[k]]. Returns (K, C, pooled_height, pooled_width) with the rows in roi
/// order, each bit for bit what roi_align gives for that roi on its level (and each level's
/// gradient what roi_align's backward gives for that level's rois, in roi order): Detectron2's
/// ROIPooler without gathering each level's rows and putting them back in order.
/// features: one (N, C, H_l, W_l) map per level, rois' dtype; levels: (K,) int64 in [0, levels).
/// Differentiable with respect to every level's map. Throws c10::Error naming the roi whose level,
/// batch index or corners are invalid.
at::Tensor multilevel_roi_align(at::TensorList features, const at::Tensor& rois,
                                const at::Tensor& levels, at::ArrayRef<double> spatial_scales,
                                int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                                bool aligned);

/// Gradient of multilevel_roi_align with respect to each level's map, for the same rois, levels
/// and settings; level l is (batch_size, channels, heights[l], widths[l]), stored channels-last
/// when `channels_last` (as the maps were: the gradient is accumulated that way and needs no
/// change of layout), NCHW otherwise.
std::vector<at::Tensor> multilevel_roi_align_backward(
    const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& levels,
    at::ArrayRef<double> spatial_scales, int64_t pooled_height, int64_t pooled_width,
    int64_t batch_size, int64_t channels, at::IntArrayRef heights, at::IntArrayRef widths,
    int64_t sampling_ratio, bool aligned, bool channels_last = false);

}  // namespace detkit::ops
