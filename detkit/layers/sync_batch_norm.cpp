#include "detkit/layers/sync_batch_norm.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <ostream>

#include "detkit/distributed/comm.h"
#include "detkit/utils/error.h"

namespace detkit::layers {

namespace {
at::Tensor sum_over_ranks(const at::Tensor& x) {
  std::vector<at::Tensor> t = {x.contiguous().clone()};
  distributed::communicator().all_reduce_sum(t);
  return t[0];
}

struct AllReduceSum : public torch::autograd::Function<AllReduceSum> {
  static at::Tensor forward(torch::autograd::AutogradContext*, const at::Tensor& x) {
    return sum_over_ranks(x);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list grads) {
    return {sum_over_ranks(grads[0])};
  }
};
}  // namespace

at::Tensor differentiable_all_reduce_sum(const at::Tensor& x) {
  if (distributed::get_world_size() == 1) return x;
  return AllReduceSum::apply(x);
}

NaiveSyncBatchNorm2dImpl::NaiveSyncBatchNorm2dImpl(int64_t num_features, bool per_rank_average,
                                                   double eps, double momentum)
    : num_features_(num_features), per_rank_average_(per_rank_average), eps_(eps),
      momentum_(momentum) {
  weight = register_parameter("weight", at::ones({num_features}));
  bias = register_parameter("bias", at::zeros({num_features}));
  running_mean = register_buffer("running_mean", at::zeros({num_features}));
  running_var = register_buffer("running_var", at::ones({num_features}));
  num_batches_tracked = register_buffer("num_batches_tracked", at::zeros({}, at::kLong));
}

void NaiveSyncBatchNorm2dImpl::pretty_print(std::ostream& stream) const {
  stream << "detkit::layers::NaiveSyncBatchNorm2d(" << num_features_ << ", eps=" << eps_
         << ", momentum=" << momentum_ << ", stats=" << (per_rank_average_ ? "per rank" : "N")
         << ")";
}

at::Tensor NaiveSyncBatchNorm2dImpl::forward(const at::Tensor& input) {
  if (input.dim() != 4 || input.size(1) != num_features_)
    throw Error("NaiveSyncBatchNorm2d(" + std::to_string(num_features_) + ") expects (N, " +
                std::to_string(num_features_) + ", H, W) input");
  const int world = distributed::get_world_size();
  if (world == 1 || !is_training()) {  // BatchNorm2d
    if (is_training()) {
      at::NoGradGuard no_grad;
      num_batches_tracked.add_(1);
    }
    return at::batch_norm(input, weight, bias, running_mean, running_var, is_training(),
                          momentum_, eps_, /*cudnn_enabled=*/false);
  }
  const int64_t batch = input.size(0), channels = input.size(1);
  const double momentum = momentum_;
  at::Tensor mean, meansqr;
  double update = momentum;
  if (per_rank_average_) {
    if (batch == 0)
      throw Error("SyncBN: rank " + std::to_string(distributed::get_rank()) +
                  " has an empty batch; use naiveSyncBN_N, which weighs ranks by their images");
    const at::Tensor local = at::cat({input.mean({0, 2, 3}), (input * input).mean({0, 2, 3})});
    const at::Tensor global = differentiable_all_reduce_sum(local) * (1.0 / world);
    mean = global.narrow(0, 0, channels);
    meansqr = global.narrow(0, channels, channels);
  } else {
    at::Tensor local;
    if (batch == 0)  // zeros, with a gradient path to the input
      local = at::zeros({2 * channels + 1}, input.options()) + input.sum();
    else
      local = at::cat({input.mean({0, 2, 3}), (input * input).mean({0, 2, 3}),
                       at::ones({1}, input.options())});
    const at::Tensor global = differentiable_all_reduce_sum(local * static_cast<double>(batch));
    const double total = global[2 * channels].item<double>();
    update = std::min(total, 1.0) * momentum;  // no update when no rank had an image
    const at::Tensor stats = global / std::max(total, 1.0);
    mean = stats.narrow(0, 0, channels);
    meansqr = stats.narrow(0, channels, channels);
  }
  const at::Tensor var = meansqr - mean * mean;
  const at::Tensor scale = weight * at::rsqrt(var + eps_);
  const at::Tensor shift = bias - mean * scale;
  {
    at::NoGradGuard no_grad;
    running_mean.add_(update * (mean.detach() - running_mean));
    running_var.add_(update * (var.detach() - running_var));
    num_batches_tracked.add_(1);
  }
  return input * scale.reshape({1, -1, 1, 1}) + shift.reshape({1, -1, 1, 1});
}

}  // namespace detkit::layers
