#include "detkit/layers/conv2d.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include "detkit/layers/norm.h"

namespace detkit::layers {

Conv2dImpl::Conv2dImpl(const Conv2dOptions& o) : options_(o) {
  TORCH_CHECK(o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
              "Conv2d: channels ", o.in_channels(), " -> ", o.out_channels(),
              " are not divisible by groups ", o.groups());
  weight_ = register_parameter(
      "weight", at::empty({o.out_channels(), o.in_channels() / o.groups(), o.kernel_size(),
                           o.kernel_size()}));
  torch::nn::init::kaiming_uniform_(weight_, std::sqrt(5.0));  // torch.nn.Conv2d's default
  if (o.bias()) {
    double bound = 1.0 / std::sqrt(double(weight_[0].numel()));
    bias_ = register_parameter("bias", at::empty({o.out_channels()}).uniform_(-bound, bound));
  }
  norm_ = make_norm(o.norm(), o.out_channels());
  if (!norm_.is_empty()) register_module("norm", norm_.ptr());
}

at::Tensor Conv2dImpl::forward(const at::Tensor& x) {
  at::Tensor y = at::conv2d(x, weight_, bias_, {options_.stride(), options_.stride()},
                            {options_.padding(), options_.padding()},
                            {options_.dilation(), options_.dilation()}, options_.groups());
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
