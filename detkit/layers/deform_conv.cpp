#include "detkit/layers/deform_conv.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include "detkit/layers/norm.h"
#include "detkit/layers/norm_input_recorder.h"
#include "detkit/ops/deform_conv.h"
#include "detkit/utils/error.h"

namespace detkit::layers {

DeformConv2dImpl::DeformConv2dImpl(const DeformConv2dOptions& o) : options_(o) {
  if (o.in_channels() % o.groups() != 0 || o.out_channels() % o.groups() != 0)
    throw Error("DeformConv: channels " + std::to_string(o.in_channels()) + " -> " +
                std::to_string(o.out_channels()) + " are not divisible by groups " +
                std::to_string(o.groups()));
  if (o.in_channels() % o.deformable_groups() != 0)
    throw Error("DeformConv: in_channels " + std::to_string(o.in_channels()) +
                " are not divisible by deformable_groups " + std::to_string(o.deformable_groups()) +
                " (MODEL.RESNETS.DEFORM_NUM_GROUPS)");
  weight_ = register_parameter("weight", at::empty({o.out_channels(), o.in_channels() / o.groups(),
                                                    o.kernel_size(), o.kernel_size()}));
  // Detectron2's initialisation: kaiming uniform with the ReLU gain; the bias 0.
  torch::nn::init::kaiming_uniform_(weight_, 0.0, torch::kFanIn, torch::kReLU);
  if (o.bias()) bias_ = register_parameter("bias", at::zeros({o.out_channels()}));
  norm_ = make_norm(o.norm(), o.out_channels());
  if (!norm_.is_empty()) register_module("norm", norm_.ptr());
}

at::Tensor DeformConv2dImpl::forward(const at::Tensor& x, const at::Tensor& offset,
                                     const at::Tensor& mask) {
  const auto& o = options_;
  if (o.modulated() != mask.defined())
    throw Error(o.modulated() ? "ModulatedDeformConv: forward needs a mask"
                              : "DeformConv: forward takes no mask (v1)");
    // ops::deform_conv2d has CPU and CUDA kernels (the latter where detkit is built with CUDA).
    // On another device every argument is copied to the host in fp32 (double stays double; no CPU
    // autocast rule applies there) and the result copied back, autograd carrying the gradients
    // through the copies. Slow, but correct.
#if defined(DETKIT_WITH_CUDA)
  const bool direct = x.device().is_cpu() || x.device().is_cuda();
#else
  const bool direct = x.device().is_cpu();
#endif
  const at::ScalarType host_dtype = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const auto argument = [&](const at::Tensor& t) {
    if (!t.defined() || direct) return t;
    return t.to(at::kCPU, host_dtype);
  };
  const auto optional = [&](const at::Tensor& t) {
    return t.defined() ? c10::optional<at::Tensor>(argument(t)) : c10::nullopt;
  };
  at::Tensor y =
      ops::deform_conv2d(argument(x), argument(weight_), argument(offset), optional(mask),
                         optional(bias_), o.stride(), o.stride(), o.padding(), o.padding(),
                         o.dilation(), o.dilation(), o.groups(), o.deformable_groups());
  if (!direct) y = y.to(x.device(), x.scalar_type());
  if (!norm_.is_empty()) {
    record_norm_input(*norm_.ptr(), y);  // for precise BatchNorm's weights
    y = norm_.forward(y);
  }
  if (o.relu()) y = at::relu_(y);
  return y;
}

void c2_msra_fill(DeformConv2d& conv) {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_normal_(conv->weight(), 0.0, torch::kFanOut, torch::kReLU);
  if (conv->bias().defined()) conv->bias().zero_();
}

}  // namespace detkit::layers
