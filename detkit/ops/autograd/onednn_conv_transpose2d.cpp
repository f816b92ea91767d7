// onednn_conv_transpose2d: libtorch's forward, oneDNN's backward.
#include "detkit/ops/onednn_conv_transpose2d.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/autograd.h>

#include "detkit/ops/cpu/conv_transpose2d_kernel.h"

namespace detkit::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class ConvTranspose2dFunction : public torch::autograd::Function<ConvTranspose2dFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& weight, const at::Tensor& bias, int64_t stride,
                               int64_t padding) {
    const bool with_bias = bias.numel() > 0;  // (0) stands for no bias: apply() needs a tensor
    ctx->saved_data["with_bias"] = with_bias;
    ctx->saved_data["stride"] = stride;
    ctx->saved_data["padding"] = padding;
    ctx->save_for_backward({input, weight});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return {at::conv_transpose2d(input, weight, with_bias ? bias : at::Tensor(), stride, padding)};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const auto saved = ctx->get_saved_variables();
    const bool with_bias = ctx->saved_data["with_bias"].toBool();
    auto grads = cpu::conv_transpose2d_backward(grad_output[0].contiguous(), saved[0], saved[1],
                                                ctx->saved_data["stride"].toInt(),
                                                ctx->saved_data["padding"].toInt(), with_bias,
                                                {ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                                                 with_bias && ctx->needs_input_grad(2)});
    return {grads.input, grads.weight, grads.bias, at::Tensor(), at::Tensor()};
  }
};

bool same_on_both_axes(at::IntArrayRef values) {
  return values.size() == 2 && values[0] == values[1];
}

}  // namespace

bool onednn_conv_transpose2d_applies(const at::Tensor& input, const at::Tensor& weight,
                                     const at::Tensor& bias, at::IntArrayRef stride,
                                     at::IntArrayRef padding, at::IntArrayRef output_padding,
                                     at::IntArrayRef dilation, int64_t groups) {
  if (!same_on_both_axes(stride) || !same_on_both_axes(padding) || groups != 1) return false;
  for (int64_t v : output_padding)
    if (v != 0) return false;
  for (int64_t v : dilation)
    if (v != 1) return false;
  if (!input.device().is_cpu() || input.scalar_type() != at::kFloat ||
      weight.scalar_type() != at::kFloat || input.dim() != 4 || !input.is_contiguous() ||
      weight.dim() != 4 || weight.size(0) != input.size(1) || weight.size(2) != weight.size(3) ||
      !weight.is_contiguous() || input.size(0) == 0)
    return false;
  if (bias.defined() && (bias.scalar_type() != at::kFloat || bias.numel() != weight.size(1)))
    return false;
  if (at::autocast::is_cpu_enabled()) return false;  // bfloat16: libtorch's
  return cpu::conv_transpose_kernel_available({input.size(0), input.size(1), weight.size(1),
                                               input.size(2), input.size(3), weight.size(2),
                                               stride[0], padding[0], bias.defined()});
}

at::Tensor onednn_conv_transpose2d(const at::Tensor& input, const at::Tensor& weight,
                                   const at::Tensor& bias, int64_t stride, int64_t padding) {
  TORCH_CHECK(onednn_conv_transpose2d_applies(input, weight, bias, {stride, stride},
                                              {padding, padding}, {0, 0}, {1, 1}, 1),
              "onednn_conv_transpose2d: input ", input.sizes(), " ", input.scalar_type(),
              " and weight ", weight.sizes(),
              " are not a transposed convolution oneDNN's JIT "
              "kernels run on this CPU");
  // Its forward is aten::convolution's, which profiles and analysis::FlopCounter see as such.
  return ConvTranspose2dFunction::apply(input, weight, bias.defined() ? bias : at::empty({0}),
                                        stride, padding)[0];
}

}  // namespace detkit::ops
