#pragma once
// The argument checks each op's kernels share, CPU and CUDA alike: shapes, dtypes, sizes and
// (for several tensors) one device. Each throws c10::Error naming the op and what it got.
// What only a kernel can check (values: a roi's batch index, a level outside the pyramid) stays
// in the kernel.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>

#include "detkit/ops/cuda/deform_conv_math.h"

namespace detkit::ops {

/// nms: boxes (N, 4), scores (N), one dtype, one device.
void check_nms_arguments(const at::Tensor& boxes, const at::Tensor& scores);

/// batched_nms: boxes (N, 4) and scores (N) of one floating dtype, integer idxs (N), one device.
void check_batched_nms_arguments(const at::Tensor& boxes, const at::Tensor& scores,
                                 const at::Tensor& idxs);

/// box_iou: (N, 4) and (M, 4) boxes of one floating dtype, one device.
void check_box_iou_arguments(const at::Tensor& a, const at::Tensor& b);

/// paste_masks_in_image: masks (N, Hm, Wm) not empty, floating boxes (N, 4) on the masks'
/// device, a non-negative image size and threshold.
void check_paste_masks_arguments(const at::Tensor& masks, const at::Tensor& boxes,
                                 int64_t image_height, int64_t image_width, double threshold);

/// roi_align and its kin: rois (K, 5), a positive pooled size, sampling_ratio >= 0.
void check_roi_align_settings(const at::Tensor& rois, int64_t pooled_height, int64_t pooled_width,
                              int64_t sampling_ratio);

/// The forward's input (N, C, H, W), of the rois' dtype and device.
void check_roi_align_input(const at::Tensor& input, const at::Tensor& rois);

/// A backward's grad: (K, channels, pooled_height, pooled_width), the rois' dtype and device.
void check_roi_align_grad(const at::Tensor& grad, const at::Tensor& rois, int64_t channels,
                          int64_t pooled_height, int64_t pooled_width);

/// roi_align's backward: the input's shape (batch_size, channels, height, width), non-negative.
void check_roi_align_input_shape(int64_t batch_size, int64_t channels, int64_t height,
                                 int64_t width);

/// multilevel_roi_align's levels: (K,) int64 for K rois, on the rois' device.
void check_roi_levels(const at::Tensor& rois, const at::Tensor& levels);

/// multilevel_roi_align: as many spatial scales as levels, each level (N, C, H_l, W_l) like
/// level 0, of the rois' dtype and device.
void check_multilevel_features(at::TensorList features, const at::Tensor& rois,
                               at::ArrayRef<double> spatial_scales);

/// multilevel_roi_align's backward: one height and width per spatial scale, every size
/// non-negative.
void check_multilevel_grad_sizes(at::ArrayRef<double> spatial_scales, int64_t batch_size,
                                 int64_t channels, at::IntArrayRef heights, at::IntArrayRef widths);

/// deform_conv2d: input (N, C, H, W), weight (O, C / groups, kh, kw), offset
/// (N, 2 * offset_groups * kh * kw, out_h, out_w), mask (N, offset_groups * kh * kw, out_h, out_w)
/// and bias (O) where given, of input's floating dtype; the settings positive (padding
/// non-negative), the channels divisible by the groups. The call's sizes.
DeformConvShape check_deform_conv2d(const char* op, const at::Tensor& input,
                                    const at::Tensor& weight, const at::Tensor& offset,
                                    const std::optional<at::Tensor>& mask,
                                    const std::optional<at::Tensor>& bias, int64_t stride_h,
                                    int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                    int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                    int64_t offset_groups);

/// deform_conv2d's backward: grad shaped as the output (N, O, out_h, out_w), of input's dtype.
void check_deform_conv2d_grad(const char* op, const at::Tensor& grad, const at::Tensor& input,
                              const DeformConvShape& s);

}  // namespace detkit::ops
