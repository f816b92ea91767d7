#include "detkit/layers/conv2d.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include <algorithm>
#include <atomic>
#include <tuple>

#include "detkit/layers/norm.h"
#include "detkit/layers/norm_input_recorder.h"
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
  return "convolutions: libtorch's kernels, but transposed convolutions whose stride equals "
         "their kernel run as matrix products, forward and gradients (CONV_ALGORITHM auto)";
}

ConvAlgorithm parse_conv_algorithm(const std::string& value) {
  if (value == "auto") return ConvAlgorithm::kAuto;
  if (value == "direct") return ConvAlgorithm::kDirect;
  throw Error("CONV_ALGORITHM '" + value +
              "' is not one detkit has: \"auto\" (detkit's matrix-product transposed "
              "convolutions where they apply) or \"direct\" (libtorch's kernels only)");
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

bool Conv2dImpl::Source::same_as(const at::Tensor& t) const {
  return t.is_same(tensor) && t.storage().unsafeGetStorageImpl() == storage.unsafeGetStorageImpl() &&
         t.data_ptr() == data && t._version() == version;
}

std::pair<at::Tensor, at::Tensor> Conv2dImpl::weight_and_bias_with_norm() {
  std::vector<at::Tensor> tensors = {weight_};
  if (bias_.defined()) tensors.push_back(bias_);
  for (const auto& t : norm_.ptr()->parameters()) tensors.push_back(t);
  for (const auto& t : norm_.ptr()->buffers()) tensors.push_back(t);
  // Tensors made in InferenceMode have no version counter: nothing made from them is kept.
  const bool keep = std::none_of(tensors.begin(), tensors.end(),
                                 [](const at::Tensor& t) { return t.is_inference(); });
  std::lock_guard<std::mutex> lock(folded_mutex_);
  bool same = keep && tensors.size() == folded_.sources.size();
  for (size_t i = 0; same && i < tensors.size(); ++i) same = folded_.sources[i].same_as(tensors[i]);
  if (same) return {folded_.weight, folded_.bias};
  auto [scale, shift] = channel_affine(norm_);
  at::Tensor weight = (weight_ * scale.view({-1, 1, 1, 1})).to(weight_.scalar_type());
  at::Tensor bias = (bias_.defined() ? bias_ * scale + shift : shift).to(weight_.scalar_type());
  if (!keep) return {weight, bias};
  folded_.sources.clear();
  for (const auto& t : tensors)
    folded_.sources.push_back({t, t.storage(), t.data_ptr(), t._version()});
  folded_.weight = weight;
  folded_.bias = bias;
  return {weight, bias};
}

at::Tensor Conv2dImpl::forward(const at::Tensor& x) {
  const auto& o = options_;
  const bool fold = !at::GradMode::is_enabled() && is_channel_affine(norm_);
  at::Tensor weight = weight_, bias = bias_;
  if (fold) std::tie(weight, bias) = weight_and_bias_with_norm();
  at::Tensor y = at::conv2d(x, weight, bias, {o.stride(), o.stride()}, {o.padding(), o.padding()},
                            {o.dilation(), o.dilation()}, o.groups());
  if (!norm_.is_empty() && !fold) {
    record_norm_input(*norm_.ptr(), y);  // for precise BatchNorm's weights
    y = norm_.forward(y);
  }
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
