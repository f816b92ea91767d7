// Schema of detkit::patchwise_conv_transpose2d and when it applies; the CPU kernel is in
// ops/cpu/patchwise_conv_transpose2d_kernel.cpp.
#include "detkit/ops/patchwise_conv_transpose2d.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace detkit::ops {

bool patchwise_conv_transpose2d_applies(const at::Tensor& input, const at::Tensor& weight,
                                        const at::Tensor& bias, at::IntArrayRef stride,
                                        at::IntArrayRef padding, at::IntArrayRef output_padding,
                                        at::IntArrayRef dilation, int64_t groups) {
  auto all = [](at::IntArrayRef values, int64_t v) {
    for (int64_t x : values)
      if (x != v) return false;
    return true;
  };
  const bool floating = input.scalar_type() == at::kFloat || input.scalar_type() == at::kDouble;
  return input.device().is_cpu() && floating && input.dim() == 4 && input.numel() > 0 &&
         weight.dim() == 4 && weight.scalar_type() == input.scalar_type() &&
         weight.size(0) == input.size(1) && weight.device().is_cpu() &&
         (!bias.defined() || (bias.dim() == 1 && bias.size(0) == weight.size(1) &&
                              bias.scalar_type() == input.scalar_type())) &&
         stride.size() == 2 && stride[0] == weight.size(2) && stride[1] == weight.size(3) &&
         all(padding, 0) && all(output_padding, 0) && all(dilation, 1) && groups == 1 &&
         !at::autocast::is_autocast_enabled(at::kCPU);
}

at::Tensor patchwise_conv_transpose2d(const at::Tensor& input, const at::Tensor& weight,
                                      const at::Tensor& bias) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("detkit::patchwise_conv_transpose2d", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const c10::optional<at::Tensor>&)>();
  return op.call(input, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
}

TORCH_LIBRARY_FRAGMENT(detkit, m) {
  m.def("patchwise_conv_transpose2d(Tensor input, Tensor weight, Tensor? bias) -> Tensor");
}

}  // namespace detkit::ops
