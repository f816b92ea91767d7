// Autocast rules of detkit's ops (the AutocastCPU and AutocastCUDA dispatch keys): under autocast
// each computes in fp32, whatever mix of bfloat16 / float16 feature maps and fp32 boxes reaches
// it, as torchvision's autocast kernels do. roi_align and multilevel_roi_align return their maps'
// dtype (a bfloat16 feature map pools into a bfloat16 result for the heads that follow),
// deform_conv2d its input's (as torchvision's); the others return what they return in fp32. double
// inputs stay double (autocast leaves them alone). Backward flows through the recorded casts.
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

template <c10::DeviceType kDevice>
at::Tensor fp32(const at::Tensor& t) {
  return at::autocast::cached_cast(at::kFloat, t, kDevice);
}

template <c10::DeviceType kDevice>
c10::optional<at::Tensor> fp32(const c10::optional<at::Tensor>& t) {
  return at::autocast::cached_cast(at::kFloat, t, kDevice);
}

// Inside a rule the op runs past autocast (the device's autocast key), on its fp32 arguments.
template <c10::DeviceType kDevice>
struct NoAutocast {
  static_assert(kDevice == c10::DeviceType::CPU || kDevice == c10::DeviceType::CUDA);
  c10::impl::ExcludeDispatchKeyGuard guard{kDevice == c10::DeviceType::CPU
                                               ? c10::DispatchKey::AutocastCPU
                                               : c10::DispatchKey::AutocastCUDA};
};

template <c10::DeviceType kDevice>
at::Tensor roi_align_autocast(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                              bool aligned) {
  NoAutocast<kDevice> no_autocast;
  return roi_align(fp32<kDevice>(input), fp32<kDevice>(rois), spatial_scale, pooled_height,
                   pooled_width, sampling_ratio, aligned)
      .to(input.scalar_type());
}

template <c10::DeviceType kDevice>
at::Tensor multilevel_roi_align_autocast(at::TensorList features, const at::Tensor& rois,
                                         const at::Tensor& levels,
                                         at::ArrayRef<double> spatial_scales, int64_t pooled_height,
                                         int64_t pooled_width, int64_t sampling_ratio,
                                         bool aligned) {
  NoAutocast<kDevice> no_autocast;
  std::vector<at::Tensor> features32;
  for (const at::Tensor& f : features) features32.push_back(fp32<kDevice>(f));
  return multilevel_roi_align(features32, fp32<kDevice>(rois), levels, spatial_scales,
                              pooled_height, pooled_width, sampling_ratio, aligned)
      .to(features[0].scalar_type());
}

template <c10::DeviceType kDevice>
at::Tensor deform_conv2d_autocast(const at::Tensor& input, const at::Tensor& weight,
                                  const at::Tensor& offset, const c10::optional<at::Tensor>& mask,
                                  const c10::optional<at::Tensor>& bias, int64_t stride_h,
                                  int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                  int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                  int64_t offset_groups) {
  NoAutocast<kDevice> no_autocast;
  return deform_conv2d(fp32<kDevice>(input), fp32<kDevice>(weight), fp32<kDevice>(offset),
                       fp32<kDevice>(mask), fp32<kDevice>(bias), stride_h, stride_w, pad_h, pad_w,
                       dilation_h, dilation_w, groups, offset_groups)
      .to(input.scalar_type());
}

template <c10::DeviceType kDevice>
at::Tensor nms_autocast(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  NoAutocast<kDevice> no_autocast;
  return nms(fp32<kDevice>(boxes), fp32<kDevice>(scores), iou_threshold);
}

template <c10::DeviceType kDevice>
at::Tensor batched_nms_autocast(const at::Tensor& boxes, const at::Tensor& scores,
                                const at::Tensor& idxs, double iou_threshold) {
  NoAutocast<kDevice> no_autocast;
  return batched_nms(fp32<kDevice>(boxes), fp32<kDevice>(scores), idxs, iou_threshold);
}

template <c10::DeviceType kDevice>
at::Tensor box_iou_autocast(const at::Tensor& a, const at::Tensor& b) {
  NoAutocast<kDevice> no_autocast;
  return box_iou(fp32<kDevice>(a), fp32<kDevice>(b));
}

template <c10::DeviceType kDevice>
at::Tensor paste_masks_autocast(const at::Tensor& masks, const at::Tensor& boxes,
                                int64_t image_height, int64_t image_width, double threshold) {
  NoAutocast<kDevice> no_autocast;
  return paste_masks_in_image(fp32<kDevice>(masks), fp32<kDevice>(boxes), image_height, image_width,
                              threshold);
}

at::Tensor group_norm_autocast(const at::Tensor& input, int64_t num_groups,
                               const c10::optional<at::Tensor>& weight,
                               const c10::optional<at::Tensor>& bias, double eps,
                               bool cudnn_enabled) {
  constexpr c10::DeviceType kCPU = c10::DeviceType::CPU;
  NoAutocast<kCPU> no_autocast;
  return at::group_norm(fp32<kCPU>(input), num_groups, fp32<kCPU>(weight), fp32<kCPU>(bias), eps,
                        cudnn_enabled);
}

// The same rules for both devices' autocast (CUDA's fp16 and bf16 included).
template <c10::DeviceType kDevice>
void register_rules(torch::Library& m) {
  m.impl("roi_align", roi_align_autocast<kDevice>);
  m.impl("multilevel_roi_align", multilevel_roi_align_autocast<kDevice>);
  m.impl("deform_conv2d", deform_conv2d_autocast<kDevice>);
  m.impl("nms", nms_autocast<kDevice>);
  m.impl("batched_nms", batched_nms_autocast<kDevice>);
  m.impl("box_iou", box_iou_autocast<kDevice>);
  m.impl("paste_masks_in_image", paste_masks_autocast<kDevice>);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, AutocastCPU, m) { m.impl("group_norm", group_norm_autocast); }

TORCH_LIBRARY_IMPL(detkit, AutocastCPU, m) { register_rules<c10::DeviceType::CPU>(m); }
TORCH_LIBRARY_IMPL(detkit, AutocastCUDA, m) { register_rules<c10::DeviceType::CUDA>(m); }

}  // namespace detkit::ops
