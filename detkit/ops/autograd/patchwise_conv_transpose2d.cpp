// Autograd kernel of detkit::patchwise_conv_transpose2d: its gradients are matrix products too
// (ops/cpu/patchwise_conv_transpose2d_kernel.h), not libtorch's transposed convolution's.
#include "detkit/ops/patchwise_conv_transpose2d.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "detkit/ops/cpu/patchwise_conv_transpose2d_kernel.h"

namespace detkit::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class PatchwiseConvTranspose2dFunction
    : public torch::autograd::Function<PatchwiseConvTranspose2dFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& weight, const at::Tensor& bias) {
    const bool with_bias = bias.numel() > 0;  // (0) stands for no bias: apply() needs a tensor
    ctx->saved_data["with_bias"] = with_bias;
    ctx->save_for_backward({input, weight});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return {patchwise_conv_transpose2d(input, weight, with_bias ? bias : at::Tensor())};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const auto saved = ctx->get_saved_variables();
    const bool with_bias = ctx->saved_data["with_bias"].toBool();
    RECORD_FUNCTION("detkit::patchwise_conv_transpose2d_backward",
                    std::vector<c10::IValue>({grad_output[0], saved[0], saved[1]}));
    auto grads = cpu::patchwise_conv_transpose2d_backward(
        grad_output[0], saved[0], saved[1], with_bias,
        {ctx->needs_input_grad(0), ctx->needs_input_grad(1),
         with_bias && ctx->needs_input_grad(2)});
    return {grads.input, grads.weight, grads.bias};
  }
};

at::Tensor patchwise_conv_transpose2d_autograd(const at::Tensor& input, const at::Tensor& weight,
                                               const c10::optional<at::Tensor>& bias) {
  const bool with_bias = bias.has_value() && bias->defined();
  return PatchwiseConvTranspose2dFunction::apply(
      input, weight, with_bias ? *bias : at::empty({0}, input.options()))[0];
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, Autograd, m) {
  m.impl("patchwise_conv_transpose2d", TORCH_FN(patchwise_conv_transpose2d_autograd));
}

}  // namespace detkit::ops
