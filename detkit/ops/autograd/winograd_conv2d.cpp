// winograd_conv2d's autograd: the backward passes are oneDNN's Winograd kernels as well.
#include "detkit/ops/winograd_conv2d.h"

#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>

#include "detkit/ops/cpu/winograd_conv2d_kernel.h"

namespace detkit::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class WinogradConv2dFunction : public torch::autograd::Function<WinogradConv2dFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& weight, const at::Tensor& bias) {
    const bool with_bias = bias.numel() > 0;  // (0) stands for no bias: apply() needs a tensor
    ctx->saved_data["with_bias"] = with_bias;
    ctx->save_for_backward({input, weight});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return {cpu::winograd_conv2d_forward(input, weight, with_bias ? bias : at::Tensor())};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const auto saved = ctx->get_saved_variables();
    const bool with_bias = ctx->saved_data["with_bias"].toBool();
    auto grads = cpu::winograd_conv2d_backward(grad_output[0], saved[0], saved[1], with_bias,
                                               {ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                                                with_bias && ctx->needs_input_grad(2)});
    return {grads.input, grads.weight, grads.bias};
  }
};

}  // namespace

bool winograd_conv2d_available() {
  static const bool available = cpu::winograd_kernel_available(1, 64, 64, 32, 32, false);
  return available;
}

bool winograd_geometry(int64_t kernel_h, int64_t kernel_w, int64_t stride, int64_t padding,
                       int64_t dilation, int64_t groups, int64_t n, int64_t h, int64_t w) {
  return kernel_h == 3 && kernel_w == 3 && stride == 1 && padding == 1 && dilation == 1 &&
         groups == 1 && n > 0 && h * w >= kWinogradMinMapPixels;
}

bool winograd_conv2d_applies(const at::Tensor& input, const at::Tensor& weight,
                             const at::Tensor& bias, int64_t stride, int64_t padding,
                             int64_t dilation, int64_t groups) {
  if (!input.device().is_cpu() || input.scalar_type() != at::kFloat ||
      weight.scalar_type() != at::kFloat || input.dim() != 4 ||
      !(input.is_contiguous() || input.is_contiguous(at::MemoryFormat::ChannelsLast)) ||
      weight.dim() != 4 || weight.size(1) != input.size(1) || !weight.is_contiguous())
    return false;
  if (at::autocast::is_cpu_enabled()) return false;  // bfloat16 convolutions: libtorch's
  if (!winograd_geometry(weight.size(2), weight.size(3), stride, padding, dilation, groups,
                         input.size(0), input.size(2), input.size(3)))
    return false;
  return cpu::winograd_kernel_available(input.size(0), input.size(1), weight.size(0), input.size(2),
                                        input.size(3), bias.defined());
}

at::Tensor winograd_conv2d(const at::Tensor& input, const at::Tensor& weight,
                           const at::Tensor& bias) {
  TORCH_CHECK(winograd_conv2d_applies(input, weight, bias, 1, 1, 1, 1), "winograd_conv2d: input ",
              input.sizes(), " ", input.scalar_type(), " and weight ", weight.sizes(),
              " are not a float32 3x3 convolution oneDNN's Winograd kernels run");
  // Profiles and analysis::FlopCounter see it under this name, with (input, weight).
  RECORD_FUNCTION("detkit::winograd_conv2d", std::vector<c10::IValue>({input, weight}));
  return WinogradConv2dFunction::apply(input, weight, bias.defined() ? bias : at::empty({0}))[0];
}

}  // namespace detkit::ops
