// Schema of detkit::roi_align, detkit::multilevel_roi_align and their backward ops; the C++ API
// calls them through the dispatcher, so the Autograd kernel (autograd/roi_align.cpp) runs before
// the CPU kernel.
#include "detkit/ops/roi_align.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace detkit::ops {

at::Tensor roi_align(const at::Tensor& input, const at::Tensor& rois, double spatial_scale,
                     int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                     bool aligned) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("detkit::roi_align", "")
                             .typed<decltype(roi_align)>();
  return op.call(input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio, aligned);
}

at::Tensor roi_align_backward(const at::Tensor& grad, const at::Tensor& rois, double spatial_scale,
                              int64_t pooled_height, int64_t pooled_width, int64_t batch_size,
                              int64_t channels, int64_t height, int64_t width,
                              int64_t sampling_ratio, bool aligned) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("detkit::_roi_align_backward", "")
                             .typed<decltype(roi_align_backward)>();
  return op.call(grad, rois, spatial_scale, pooled_height, pooled_width, batch_size, channels,
                 height, width, sampling_ratio, aligned);
}

at::Tensor multilevel_roi_align(at::TensorList features, const at::Tensor& rois,
                                const at::Tensor& levels, at::ArrayRef<double> spatial_scales,
                                int64_t pooled_height, int64_t pooled_width, int64_t sampling_ratio,
                                bool aligned) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("detkit::multilevel_roi_align", "")
                             .typed<decltype(multilevel_roi_align)>();
  return op.call(features, rois, levels, spatial_scales, pooled_height, pooled_width,
                 sampling_ratio, aligned);
}

std::vector<at::Tensor> multilevel_roi_align_backward(
    const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& levels,
    at::ArrayRef<double> spatial_scales, int64_t pooled_height, int64_t pooled_width,
    int64_t batch_size, int64_t channels, at::IntArrayRef heights, at::IntArrayRef widths,
    int64_t sampling_ratio, bool aligned, bool channels_last) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("detkit::_multilevel_roi_align_backward", "")
                             .typed<decltype(multilevel_roi_align_backward)>();
  return op.call(grad, rois, levels, spatial_scales, pooled_height, pooled_width, batch_size,
                 channels, heights, widths, sampling_ratio, aligned, channels_last);
}

TORCH_LIBRARY_FRAGMENT(detkit, m) {
  m.def(
      "roi_align(Tensor input, Tensor rois, float spatial_scale, int pooled_height, "
      "int pooled_width, int sampling_ratio, bool aligned) -> Tensor");
  m.def(
      "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, int pooled_height, "
      "int pooled_width, int batch_size, int channels, int height, int width, "
      "int sampling_ratio, bool aligned) -> Tensor");
  m.def(
      "multilevel_roi_align(Tensor[] features, Tensor rois, Tensor levels, float[] spatial_scales, "
      "int pooled_height, int pooled_width, int sampling_ratio, bool aligned) -> Tensor");
  m.def(
      "_multilevel_roi_align_backward(Tensor grad, Tensor rois, Tensor levels, "
      "float[] spatial_scales, int pooled_height, int pooled_width, int batch_size, int channels, "
      "int[] heights, int[] widths, int sampling_ratio, bool aligned, bool channels_last) -> "
      "Tensor[]");
}

}  // namespace detkit::ops
