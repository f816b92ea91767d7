// Autocast rules of detkit's ops (the AutocastCPU dispatch key): under autocast each computes in
// fp32, whatever mix of bfloat16 feature maps and fp32 boxes reaches it, as torchvision's
// autocast kernels do. roi_align and multilevel_roi_align return their maps' dtype (a bfloat16
// feature map pools into a bfloat16 result for the heads that follow), deform_conv2d its input's
// (as torchvision's); the others return what they return in fp32. double inputs stay double
// (autocast leaves them alone). Backward flows through the recorded casts.
//
// Plus one rule libtorch 1.13's CPU autocast lacks: aten::group_norm, whose CPU kernel refuses a
// bfloat16 input with fp32 weights ("expected scalar type BFloat16 but found Float", in Python
// too), runs in fp32 and returns fp32, as CUDA autocast's fp32 list has it. Without it no
// GroupNorm model (Detectron2's GN configs, detkit's demos) trains under autocast.
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "detkit/ops/batched_nms.h"
#include "detkit/ops/box_iou.h"
#include "detkit/ops/deform_conv.h"
#include "detkit/ops/nms.h"
#include "detkit/ops/paste_masks.h"
#include "detkit/ops/roi_align.h"

namespace detkit::ops {
namespace {

at::Tensor fp32(const at::Tensor& t) {
  return at::autocast::cached_cast(at::kFloat, t, c10::DeviceType::CPU);
}

// Inside a rule the op runs past autocast, on its fp32 arguments.
using NoAutocast = c10::impl::ExcludeDispatchKeyGuard;
constexpr c10::DispatchKey kAutocastCPU = c10::DispatchKey::AutocastCPU;

at::Tensor roi_align_autocast(const at::Tensor& input, const at::Tensor& rois,
                              double spatial_scale, int64_t pooled_height, int64_t pooled_width,
                              int64_t sampling_ratio, bool aligned) {
  NoAutocast no_autocast(kAutocastCPU);
  return roi_align(fp32(input), fp32(rois), spatial_scale, pooled_height, pooled_width,
                   sampling_ratio, aligned)
      .to(input.scalar_type());
}

at::Tensor multilevel_roi_align_autocast(at::TensorList features, const at::Tensor& rois,
                                         const at::Tensor& levels,
                                         at::ArrayRef<double> spatial_scales, int64_t pooled_height,
                                         int64_t pooled_width, int64_t sampling_ratio,
                                         bool aligned) {
  NoAutocast no_autocast(kAutocastCPU);
  std::vector<at::Tensor> features32;
  for (const at::Tensor& f : features) features32.push_back(fp32(f));
  return multilevel_roi_align(features32, fp32(rois), levels, spatial_scales, pooled_height,
                              pooled_width, sampling_ratio, aligned)
      .to(features[0].scalar_type());
}

at::Tensor deform_conv2d_autocast(const at::Tensor& input, const at::Tensor& weight,
                                  const at::Tensor& offset, const c10::optional<at::Tensor>& mask,
                                  const c10::optional<at::Tensor>& bias, int64_t stride_h,
                                  int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                  int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                  int64_t offset_groups) {
  NoAutocast no_autocast(kAutocastCPU);
  auto fp32_optional = [](const c10::optional<at::Tensor>& t) {
    return at::autocast::cached_cast(at::kFloat, t, c10::DeviceType::CPU);
  };
  return deform_conv2d(fp32(input), fp32(weight), fp32(offset), fp32_optional(mask),
                       fp32_optional(bias), stride_h, stride_w, pad_h, pad_w, dilation_h,
                       dilation_w, groups, offset_groups)
      .to(input.scalar_type());
}

at::Tensor nms_autocast(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  NoAutocast no_autocast(kAutocastCPU);
  return nms(fp32(boxes), fp32(scores), iou_threshold);
}

at::Tensor batched_nms_autocast(const at::Tensor& boxes, const at::Tensor& scores,
                                const at::Tensor& idxs, double iou_threshold) {
  NoAutocast no_autocast(kAutocastCPU);
  return batched_nms(fp32(boxes), fp32(scores), idxs, iou_threshold);
}

at::Tensor box_iou_autocast(const at::Tensor& a, const at::Tensor& b) {
  NoAutocast no_autocast(kAutocastCPU);
  return box_iou(fp32(a), fp32(b));
}

at::Tensor paste_masks_autocast(const at::Tensor& masks, const at::Tensor& boxes,
                                int64_t image_height, int64_t image_width, double threshold) {
  NoAutocast no_autocast(kAutocastCPU);
  return paste_masks_in_image(fp32(masks), fp32(boxes), image_height, image_width, threshold);
}

at::Tensor group_norm_autocast(const at::Tensor& input, int64_t num_groups,
                               const c10::optional<at::Tensor>& weight,
                               const c10::optional<at::Tensor>& bias, double eps,
                               bool cudnn_enabled) {
  NoAutocast no_autocast(kAutocastCPU);
  return at::group_norm(fp32(input), num_groups,
                        at::autocast::cached_cast(at::kFloat, weight, c10::DeviceType::CPU),
                        at::autocast::cached_cast(at::kFloat, bias, c10::DeviceType::CPU), eps,
                        cudnn_enabled);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutocastCPU, m) { m.impl("group_norm", group_norm_autocast); }

TORCH_LIBRARY_IMPL(detkit, AutocastCPU, m) {
  m.impl("roi_align", roi_align_autocast);
  m.impl("multilevel_roi_align", multilevel_roi_align_autocast);
  m.impl("deform_conv2d", deform_conv2d_autocast);
  m.impl("nms", nms_autocast);
  m.impl("batched_nms", batched_nms_autocast);
  m.impl("box_iou", box_iou_autocast);
  m.impl("paste_masks_in_image", paste_masks_autocast);
}

}  // namespace detkit::ops
