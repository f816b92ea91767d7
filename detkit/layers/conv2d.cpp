#include "detkit/layers/conv2d.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include <atomic>

#include "detkit/layers/norm.h"
#include "detkit/ops/blocked_maps.h"
#include "detkit/ops/winograd_conv2d.h"
#include "detkit/utils/error.h"

namespace detkit::layers {
namespace {

std::atomic<ConvAlgorithm>& process_conv_algorithm() {
  static std::atomic<ConvAlgorithm> algorithm{ConvAlgorithm::kAuto};
  return algorithm;
}

}  // namespace

void set_conv_algorithm(ConvAlgorithm algorithm) { process_conv_algorithm() = algorithm; }

ConvAlgorithm conv_algorithm() { return process_conv_algorithm(); }

std::string conv_algorithm_report(ConvAlgorithm algorithm) {
  if (algorithm == ConvAlgorithm::kDirect)
    return "convolutions: libtorch's kernels (CONV_ALGORITHM direct)";
  const std::string transposed =
      "; transposed convolutions on oneDNN's deconvolution kernels where it has JIT ones for the "
      "shape (CONV_ALGORITHM auto)";
  if (!ops::winograd_conv2d_available())
    return "convolutions: libtorch's direct kernels (oneDNN has no Winograd kernels on this CPU; "
           "they need AVX-512)" +
           transposed;
  return "convolutions: oneDNN's Winograd F(4x4, 3x3) kernels for float32 3x3 stride-1 maps of "
         "14x14 and more, libtorch's direct kernels for the rest; in training, a BN or FrozenBN "
         "ResNet and its FPN on oneDNN's kernels in their blocked layout (no reorders)" +
         transposed;
}

ConvAlgorithm parse_conv_algorithm(const std::string& value) {
  if (value == "auto") return ConvAlgorithm::kAuto;
  if (value == "direct") return ConvAlgorithm::kDirect;
  throw Error("CONV_ALGORITHM '" + value +
              "' is not one detkit has: \"auto\" (Winograd where it pays) or \"direct\"");
}

Conv2dImpl::Conv2dImpl(const Conv2dOptions& o) : options_(o) {
  TORCH_CHECK(o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
              "Conv2d: channels ", o.in_channels(), " -> ", o.out_channels(),
              " are not divisible by groups ", o.groups());
  weight_ = register_parameter("weight", at::empty({o.out_channels(), o.in_channels() / o.groups(),
                                                    o.kernel_size(), o.kernel_size()}));
  torch::nn::init::kaiming_uniform_(weight_, std::sqrt(5.0));  // torch.nn.Conv2d's default
  if (o.bias()) {
    double bound = 1.0 / std::sqrt(double(weight_[0].numel()));
    bias_ = register_parameter("bias", at::empty({o.out_channels()}).uniform_(-bound, bound));
  }
  norm_ = make_norm(o.norm(), o.out_channels());
  if (!norm_.is_empty()) register_module("norm", norm_.ptr());
}

at::Tensor Conv2dImpl::forward_blocked(const at::Tensor& x) {
  const auto& o = options_;
  TORCH_CHECK(o.groups() == 1, "Conv2d: a blocked map needs one group, got ", o.groups());
  const at::Tensor y =
      ops::is_blocked(x)
          ? ops::blocked_conv2d(x, weight_, bias_, o.stride(), o.padding(), o.dilation())
          : ops::plain_to_blocked_conv2d(x, weight_, bias_, o.stride(), o.padding(), o.dilation());
  return blocked_norm_forward(norm_, y, o.relu());
}

at::Tensor Conv2dImpl::forward(const at::Tensor& x) {
  const auto& o = options_;
  if (ops::is_blocked(x)) return forward_blocked(x);
  at::Tensor y =
      conv_algorithm() == ConvAlgorithm::kAuto &&
              ops::winograd_conv2d_applies(x, weight_, bias_, o.stride(), o.padding(), o.dilation(),
                                           o.groups())
          ? ops::winograd_conv2d(x, weight_, bias_)
          : at::conv2d(x, weight_, bias_, {o.stride(), o.stride()}, {o.padding(), o.padding()},
                       {o.dilation(), o.dilation()}, o.groups());
  if (!norm_.is_empty()) y = norm_.forward(y);
  if (options_.relu()) y = at::relu_(y);
  return y;
}

void c2_msra_fill(Conv2d& conv) {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_normal_(conv->weight(), 0.0, torch::kFanOut, torch::kReLU);
  if (conv->bias().defined()) conv->bias().zero_();
}

void c2_xavier_fill(Conv2d& conv) {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(conv->weight(), 1.0);
  if (conv->bias().defined()) conv->bias().zero_();
}

}  // namespace detkit::layers
