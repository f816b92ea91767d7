// Autograd kernel of detkit::deform_conv2d: gradients flow to the input, weight, offset, mask and
// bias, each computed only when needed. Double backward is refused with an error.
#include "detkit/ops/deform_conv.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

namespace detkit::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class DeformConv2dFunction : public torch::autograd::Function<DeformConv2dFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input,
                               const at::Tensor& weight, const at::Tensor& offset,
                               const c10::optional<at::Tensor>& mask,
                               const c10::optional<at::Tensor>& bias, int64_t stride_h,
                               int64_t stride_w, int64_t pad_h, int64_t pad_w, int64_t dilation_h,
                               int64_t dilation_w, int64_t groups, int64_t offset_groups) {
    const bool with_mask = mask.has_value() && mask->defined();
    ctx->saved_data["with_mask"] = with_mask;
    ctx->saved_data["with_bias"] = bias.has_value() && bias->defined();
    ctx->saved_data["settings"] = std::vector<int64_t>{
        stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups, offset_groups};
    ctx->save_for_backward({input, weight, offset, with_mask ? *mask : at::Tensor()});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return {deform_conv2d(input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
                          dilation_h, dilation_w, groups, offset_groups)};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    TORCH_CHECK(!(at::GradMode::is_enabled() && grad_output[0].requires_grad()),
                "detkit::deform_conv2d: double backward is not supported");
    const variable_list saved = ctx->get_saved_variables();
    const bool with_mask = ctx->saved_data["with_mask"].toBool();
    const bool with_bias = ctx->saved_data["with_bias"].toBool();
    const std::vector<int64_t> p = ctx->saved_data["settings"].toIntVector();
    // needs_input_grad counts the tensors given: an absent mask takes no index.
    const size_t bias_index = with_mask ? 4 : 3;
    auto [grad_input, grad_weight, grad_offset, grad_mask, grad_bias] = deform_conv2d_backward(
        grad_output[0], saved[0], saved[1], saved[2],
        with_mask ? c10::optional<at::Tensor>(saved[3]) : c10::nullopt, p[0], p[1], p[2], p[3],
        p[4], p[5], p[6], p[7],
        {ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad(2),
         with_mask && ctx->needs_input_grad(3), with_bias && ctx->needs_input_grad(bias_index)});
    // One entry per forward argument: the five tensors, then the eight settings.
    variable_list grads = {grad_input, grad_weight, grad_offset, grad_mask, grad_bias};
    grads.resize(13);
    return grads;
  }
};

at::Tensor deform_conv2d_autograd(const at::Tensor& input, const at::Tensor& weight,
                                  const at::Tensor& offset, const c10::optional<at::Tensor>& mask,
                                  const c10::optional<at::Tensor>& bias, int64_t stride_h,
                                  int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                  int64_t dilation_h, int64_t dilation_w, int64_t groups,
                                  int64_t offset_groups) {
  return DeformConv2dFunction::apply(input, weight, offset, mask, bias, stride_h, stride_w, pad_h,
                                     pad_w, dilation_h, dilation_w, groups, offset_groups)[0];
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, Autograd, m) {
  m.impl("deform_conv2d", TORCH_FN(deform_conv2d_autograd));
}

}  // namespace detkit::ops
