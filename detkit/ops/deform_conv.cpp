// Schema of detkit::deform_conv2d and detkit::_deform_conv2d_backward; the C++ API calls them
// through the dispatcher, so the Autograd kernel (autograd/deform_conv.cpp) runs before the CPU
// kernel (cpu/deform_conv_kernel.cpp).
#include "detkit/ops/deform_conv.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace detkit::ops {

at::Tensor deform_conv2d(const at::Tensor& input, const at::Tensor& weight,
                         const at::Tensor& offset, const c10::optional<at::Tensor>& mask,
                         const c10::optional<at::Tensor>& bias, int64_t stride_h, int64_t stride_w,
                         int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                         int64_t groups, int64_t offset_groups) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("detkit::deform_conv2d", "")
                             .typed<decltype(deform_conv2d)>();
  return op.call(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h,
                 dilation_w, groups, offset_groups);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, at::Tensor> deform_conv2d_backward(
    const at::Tensor& grad, const at::Tensor& input, const at::Tensor& weight,
    const at::Tensor& offset, const c10::optional<at::Tensor>& mask, int64_t stride_h,
    int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
    int64_t groups, int64_t offset_groups, std::array<bool, 5> output_mask) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("detkit::_deform_conv2d_backward", "")
                             .typed<decltype(deform_conv2d_backward)>();
  return op.call(grad, input, weight, offset, mask, stride_h, stride_w, pad_h, pad_w, dilation_h,
                 dilation_w, groups, offset_groups, output_mask);
}

TORCH_LIBRARY_FRAGMENT(detkit, m) {
  m.def(
      "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor? mask, Tensor? bias, "
      "int stride_h, int stride_w, int pad_h, int pad_w, int dilation_h, int dilation_w, "
      "int groups, int offset_groups) -> Tensor");
  m.def(
      "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, "
      "Tensor? mask, int stride_h, int stride_w, int pad_h, int pad_w, int dilation_h, "
      "int dilation_w, int groups, int offset_groups, bool[5] output_mask) -> "
      "(Tensor, Tensor, Tensor, Tensor, Tensor)");
}

}  // namespace detkit::ops
