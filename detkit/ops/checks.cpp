#include "detkit/ops/checks.h"

#include <c10/util/Exception.h>

namespace detkit::ops {

void check_nms_arguments(const at::Tensor& boxes, const at::Tensor& scores) {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, "nms: boxes must be (N, 4), got ",
              boxes.sizes());
  TORCH_CHECK(scores.dim() == 1 && scores.size(0) == boxes.size(0), "nms: scores must be (",
              boxes.size(0), "), got ", scores.sizes());
  TORCH_CHECK(boxes.scalar_type() == scores.scalar_type(), "nms: boxes are ", boxes.scalar_type(),
              " but scores are ", scores.scalar_type());
  TORCH_CHECK(boxes.device() == scores.device(), "nms: boxes are on ", boxes.device(),
              " but scores are on ", scores.device());
}

void check_batched_nms_arguments(const at::Tensor& boxes, const at::Tensor& scores,
                                 const at::Tensor& idxs) {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, "batched_nms: boxes must be (N, 4), got ",
              boxes.sizes());
  TORCH_CHECK(scores.dim() == 1 && scores.size(0) == boxes.size(0), "batched_nms: scores must be (",
              boxes.size(0), "), got ", scores.sizes());
  TORCH_CHECK(idxs.dim() == 1 && idxs.size(0) == boxes.size(0), "batched_nms: idxs must be (",
              boxes.size(0), "), got ", idxs.sizes());
  TORCH_CHECK(at::isIntegralType(idxs.scalar_type(), /*includeBool=*/false),
              "batched_nms: idxs must hold integer categories, got ", idxs.scalar_type());
  TORCH_CHECK(
      at::isFloatingType(boxes.scalar_type()) && boxes.scalar_type() == scores.scalar_type(),
      "batched_nms: boxes and scores must share a floating dtype, got ", boxes.scalar_type(),
      " and ", scores.scalar_type());
  TORCH_CHECK(boxes.device() == scores.device() && boxes.device() == idxs.device(),
              "batched_nms: boxes, scores and idxs must be on one device, got ", boxes.device(),
              ", ", scores.device(), " and ", idxs.device());
}

void check_box_iou_arguments(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 2 && a.size(1) == 4, "box_iou: first boxes must be (N, 4), got ",
              a.sizes());
  TORCH_CHECK(b.dim() == 2 && b.size(1) == 4, "box_iou: second boxes must be (M, 4), got ",
              b.sizes());
  TORCH_CHECK(at::isFloatingType(a.scalar_type()) && a.scalar_type() == b.scalar_type(),
              "box_iou: boxes must share a floating dtype, got ", a.scalar_type(), " and ",
              b.scalar_type());
  TORCH_CHECK(a.device() == b.device(), "box_iou: boxes are on ", a.device(), " and ", b.device());
}

void check_paste_masks_arguments(const at::Tensor& masks, const at::Tensor& boxes,
                                 int64_t image_height, int64_t image_width, double threshold) {
  TORCH_CHECK(masks.dim() == 3, "paste_masks_in_image: masks must be (N, Hm, Wm), got ",
              masks.sizes());
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4 && boxes.size(0) == masks.size(0),
              "paste_masks_in_image: boxes must be (", masks.size(0), ", 4), got ", boxes.sizes());
  TORCH_CHECK(at::isFloatingType(boxes.scalar_type()),
              "paste_masks_in_image: boxes must be floating point, got ", boxes.scalar_type());
  TORCH_CHECK(image_height >= 0 && image_width >= 0,
              "paste_masks_in_image: image size must be non-negative, got ", image_height, "x",
              image_width);
  TORCH_CHECK(threshold >= 0, "paste_masks_in_image: threshold must be >= 0, got ", threshold);
  TORCH_CHECK(masks.size(0) == 0 || (masks.size(1) > 0 && masks.size(2) > 0),
              "paste_masks_in_image: masks must not be empty, got ", masks.sizes());
  TORCH_CHECK(masks.device() == boxes.device(), "paste_masks_in_image: masks are on ",
              masks.device(), " but boxes are on ", boxes.device());
}

void check_roi_align_settings(const at::Tensor& rois, int64_t pooled_height, int64_t pooled_width,
                              int64_t sampling_ratio) {
  TORCH_CHECK(rois.dim() == 2 && rois.size(1) == 5,
              "roi_align: rois must be (K, 5) [batch_index, x1, y1, x2, y2], got ", rois.sizes());
  TORCH_CHECK(pooled_height > 0 && pooled_width > 0,
              "roi_align: pooled size must be positive, got ", pooled_height, "x", pooled_width);
  TORCH_CHECK(sampling_ratio >= 0, "roi_align: sampling_ratio must be >= 0 (0 = adaptive), got ",
              sampling_ratio);
}

void check_roi_align_input(const at::Tensor& input, const at::Tensor& rois) {
  TORCH_CHECK(input.dim() == 4, "roi_align: input must be (N, C, H, W), got ", input.sizes());
  TORCH_CHECK(input.scalar_type() == rois.scalar_type(), "roi_align: input is ",
              input.scalar_type(), " but rois are ", rois.scalar_type());
  TORCH_CHECK(input.device() == rois.device(), "roi_align: input is on ", input.device(),
              " but rois are on ", rois.device());
}

void check_roi_align_grad(const at::Tensor& grad, const at::Tensor& rois, int64_t channels,
                          int64_t pooled_height, int64_t pooled_width) {
  TORCH_CHECK(grad.dim() == 4 && grad.size(0) == rois.size(0) && grad.size(1) == channels &&
                  grad.size(2) == pooled_height && grad.size(3) == pooled_width,
              "roi_align backward: grad must be (", rois.size(0), ", ", channels, ", ",
              pooled_height, ", ", pooled_width, "), got ", grad.sizes());
  TORCH_CHECK(grad.scalar_type() == rois.scalar_type(), "roi_align backward: grad is ",
              grad.scalar_type(), " but rois are ", rois.scalar_type());
  TORCH_CHECK(grad.device() == rois.device(), "roi_align backward: grad is on ", grad.device(),
              " but rois are on ", rois.device());
}

void check_roi_align_input_shape(int64_t batch_size, int64_t channels, int64_t height,
                                 int64_t width) {
  TORCH_CHECK(batch_size >= 0 && channels >= 0 && height >= 0 && width >= 0,
              "roi_align backward: input shape must be non-negative, got (", batch_size, ", ",
              channels, ", ", height, ", ", width, ")");
}

void check_roi_levels(const at::Tensor& rois, const at::Tensor& levels) {
  TORCH_CHECK(levels.dim() == 1 && levels.size(0) == rois.size(0),
              "multilevel_roi_align: levels must be (K,) for K = ", rois.size(0), " rois, got ",
              levels.sizes());
  TORCH_CHECK(levels.scalar_type() == at::kLong, "multilevel_roi_align: levels must be int64, got ",
              levels.scalar_type());
  TORCH_CHECK(levels.device() == rois.device(), "multilevel_roi_align: levels are on ",
              levels.device(), " but rois are on ", rois.device());
}

void check_multilevel_features(at::TensorList features, const at::Tensor& rois,
                               at::ArrayRef<double> spatial_scales) {
  TORCH_CHECK(!features.empty() && features.size() == spatial_scales.size(),
              "multilevel_roi_align: ", features.size(), " feature levels but ",
              spatial_scales.size(), " spatial scales");
  for (size_t l = 0; l < features.size(); ++l) {
    const at::Tensor& f = features[l];
    TORCH_CHECK(
        f.dim() == 4 && f.size(0) == features[0].size(0) && f.size(1) == features[0].size(1),
        "multilevel_roi_align: level ", l, " must be (", features[0].size(0), ", ",
        features[0].size(1), ", H, W) like level 0, got ", f.sizes());
    TORCH_CHECK(f.scalar_type() == rois.scalar_type(), "multilevel_roi_align: level ", l, " is ",
                f.scalar_type(), " but rois are ", rois.scalar_type());
    TORCH_CHECK(f.device() == rois.device(), "multilevel_roi_align: level ", l, " is on ",
                f.device(), " but rois are on ", rois.device());
  }
}

void check_multilevel_grad_sizes(at::ArrayRef<double> spatial_scales, int64_t batch_size,
                                 int64_t channels, at::IntArrayRef heights,
                                 at::IntArrayRef widths) {
  const size_t num_levels = spatial_scales.size();
  TORCH_CHECK(num_levels > 0 && heights.size() == num_levels && widths.size() == num_levels,
              "multilevel_roi_align backward: ", num_levels, " spatial scales, ", heights.size(),
              " heights and ", widths.size(), " widths");
  TORCH_CHECK(batch_size >= 0 && channels >= 0, "multilevel_roi_align backward: batch size ",
              batch_size, " and channels ", channels, " must be non-negative");
  for (size_t l = 0; l < num_levels; ++l)
    TORCH_CHECK(heights[l] >= 0 && widths[l] >= 0, "multilevel_roi_align backward: level ", l,
                " is ", heights[l], "x", widths[l]);
}

DeformConvShape check_deform_conv2d(const char* op, const at::Tensor& input,
                                    const at::Tensor& weight, const at::Tensor& offset,
                                    const std::optional<at::Tensor>& mask,
                                    const std::optional<at::Tensor>& bias, int64_t stride_h,
                                    int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                    int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                    int64_t offset_groups) {
  TORCH_CHECK(input.dim() == 4, op, ": input must be (N, C, H, W), got sizes ", input.sizes());
  const at::ScalarType dtype = input.scalar_type();
  TORCH_CHECK(dtype == at::kFloat || dtype == at::kDouble, op,
              ": input must be float or double, got ", dtype);
  auto check_dtype = [&](const at::Tensor& t, const char* name) {
    TORCH_CHECK(t.scalar_type() == dtype, op, ": ", name, " has dtype ", t.scalar_type(),
                ", expected input's ", dtype);
  };
  check_dtype(weight, "weight");
  check_dtype(offset, "offset");
  if (mask.has_value() && mask->defined()) check_dtype(*mask, "mask");
  if (bias.has_value() && bias->defined()) check_dtype(*bias, "bias");
  TORCH_CHECK(weight.dim() == 4, op,
              ": weight must be (out_channels, in_channels / groups, kh, kw), got sizes ",
              weight.sizes());
  TORCH_CHECK(stride_h > 0 && stride_w > 0, op, ": stride must be positive, got (", stride_h, ", ",
              stride_w, ")");
  TORCH_CHECK(pad_h >= 0 && pad_w >= 0, op, ": padding must be non-negative, got (", pad_h, ", ",
              pad_w, ")");
  TORCH_CHECK(dilation_h > 0 && dilation_w > 0, op, ": dilation must be positive, got (",
              dilation_h, ", ", dilation_w, ")");
  TORCH_CHECK(groups > 0, op, ": groups must be positive, got ", groups);
  TORCH_CHECK(offset_groups > 0, op, ": offset_groups must be positive, got ", offset_groups);

  DeformConvShape s;
  s.batch = input.size(0);
  s.channels = input.size(1);
  s.height = input.size(2);
  s.width = input.size(3);
  s.out_channels = weight.size(0);
  s.kernel_h = weight.size(2);
  s.kernel_w = weight.size(3);
  s.stride_h = stride_h, s.stride_w = stride_w, s.pad_h = pad_h, s.pad_w = pad_w;
  s.dilation_h = dilation_h, s.dilation_w = dilation_w;
  s.groups = groups, s.offset_groups = offset_groups;
  TORCH_CHECK(s.channels % groups == 0, op, ": input has ", s.channels,
              " channels, not divisible by groups = ", groups);
  TORCH_CHECK(weight.size(1) * groups == s.channels, op, ": weight has ", weight.size(1),
              " input channels, expected in_channels / groups = ", s.channels, " / ", groups);
  TORCH_CHECK(s.out_channels % groups == 0, op, ": weight has ", s.out_channels,
              " output channels, not divisible by groups = ", groups);
  TORCH_CHECK(s.kernel_h > 0 && s.kernel_w > 0, op, ": weight's kernel is ", s.kernel_h, " x ",
              s.kernel_w, ", expected at least 1 x 1");
  TORCH_CHECK(s.channels % offset_groups == 0, op, ": input has ", s.channels,
              " channels, not divisible by offset_groups = ", offset_groups);
  const int64_t extent_h = dilation_h * (s.kernel_h - 1) + 1;
  const int64_t extent_w = dilation_w * (s.kernel_w - 1) + 1;
  TORCH_CHECK(s.height + 2 * pad_h >= extent_h && s.width + 2 * pad_w >= extent_w, op,
              ": input is ", s.height, " x ", s.width, ", smaller than the dilated kernel ",
              extent_h, " x ", extent_w, " even with padding (", pad_h, ", ", pad_w, ")");
  s.out_h = (s.height + 2 * pad_h - extent_h) / stride_h + 1;
  s.out_w = (s.width + 2 * pad_w - extent_w) / stride_w + 1;

  // offset and mask: per image, per (offset group, tap), one value (pair) per output pixel.
  auto check_per_tap = [&](const at::Tensor& t, const char* name, int64_t per_tap,
                           const char* expected) {
    TORCH_CHECK(t.dim() == 4, op, ": ", name, " must be (N, ", expected,
                ", out_h, out_w), got sizes ", t.sizes());
    TORCH_CHECK(t.size(0) == s.batch, op, ": ", name, " has batch size ", t.size(0),
                ", expected input's ", s.batch);
    TORCH_CHECK(t.size(1) == per_tap * offset_groups * s.taps(), op, ": ", name, " has ", t.size(1),
                " channels, expected ", expected, " = ", per_tap * offset_groups * s.taps());
    TORCH_CHECK(t.size(2) == s.out_h && t.size(3) == s.out_w, op, ": ", name, " is ", t.size(2),
                " x ", t.size(3), ", expected the output size ", s.out_h, " x ", s.out_w);
  };
  check_per_tap(offset, "offset", 2, "2 * offset_groups * kh * kw");
  if (mask.has_value() && mask->defined())
    check_per_tap(*mask, "mask", 1, "offset_groups * kh * kw");
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == s.out_channels, op,
                ": bias must be (out_channels) = (", s.out_channels, "), got sizes ",
                bias->sizes());
  }
  return s;
}

void check_deform_conv2d_grad(const char* op, const at::Tensor& grad, const at::Tensor& input,
                              const DeformConvShape& s) {
  TORCH_CHECK(grad.sizes() == at::IntArrayRef({s.batch, s.out_channels, s.out_h, s.out_w}), op,
              ": grad has sizes ", grad.sizes(), ", expected the output's [", s.batch, ", ",
              s.out_channels, ", ", s.out_h, ", ", s.out_w, "]");
  TORCH_CHECK(grad.scalar_type() == input.scalar_type(), op, ": grad has dtype ",
              grad.scalar_type(), ", expected input's ", input.scalar_type());
}

}  // namespace detkit::ops
