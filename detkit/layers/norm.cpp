#include "detkit/layers/norm.h"

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/normalization.h>

#include "detkit/layers/frozen_batch_norm.h"
#include "detkit/layers/sync_batch_norm.h"
#include "detkit/ops/blocked_maps.h"
#include "detkit/utils/error.h"

namespace detkit::layers {

torch::nn::AnyModule make_norm(const std::string& name, int64_t channels) {
  if (name.empty()) return {};
  if (name == "BN") return torch::nn::AnyModule(torch::nn::BatchNorm2d(channels));
  // torch's SyncBatchNorm is CUDA-only: SyncBN is Detectron2's NaiveSyncBatchNorm here.
  if (name == "SyncBN" || name == "naiveSyncBN")
    return torch::nn::AnyModule(NaiveSyncBatchNorm2d(channels));
  if (name == "naiveSyncBN_N")
    return torch::nn::AnyModule(NaiveSyncBatchNorm2d(channels, /*per_rank_average=*/false));
  if (name == "FrozenBN") return torch::nn::AnyModule(FrozenBatchNorm2d(channels));
  if (name == "GN") {
    if (channels % 32 != 0)
      throw Error("norm 'GN' uses 32 groups: it needs a channel count divisible by 32, got " +
                  std::to_string(channels));
    return torch::nn::AnyModule(torch::nn::GroupNorm(32, channels));
  }
  throw Error("unknown norm '" + name +
              "'; known: '' (none), BN, SyncBN, naiveSyncBN, naiveSyncBN_N, FrozenBN, GN");
}

bool norm_has_blocked_form(const std::string& name) {
  return name.empty() || name == "BN" || name == "FrozenBN" || name == "GN";
}

bool is_channel_affine(torch::nn::AnyModule& norm) {
  if (norm.is_empty()) return false;
  if (dynamic_cast<FrozenBatchNorm2dImpl*>(norm.ptr().get())) return true;
  auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(norm.ptr().get());
  return bn != nullptr && !bn->is_training() && bn->options.track_running_stats();
}

std::pair<at::Tensor, at::Tensor> channel_affine(torch::nn::AnyModule& norm) {
  if (auto* frozen = dynamic_cast<FrozenBatchNorm2dImpl*>(norm.ptr().get()))
    return frozen->scale_and_shift();
  auto& bn = dynamic_cast<torch::nn::BatchNorm2dImpl&>(*norm.ptr());  // eval: running statistics
  const auto& o = bn.options;
  at::Tensor scale = (bn.running_var + o.eps()).rsqrt();
  if (o.affine()) scale = scale * bn.weight;
  at::Tensor shift = -bn.running_mean * scale;
  if (o.affine()) shift = shift + bn.bias;
  return {scale, shift};
}

at::Tensor blocked_norm_forward(torch::nn::AnyModule& norm, const at::Tensor& x, bool relu) {
  if (norm.is_empty()) {
    at::Tensor y = x;  // the convolution's fresh output: rectified in place
    return relu ? y.relu_() : y;
  }
  if (is_channel_affine(norm)) {
    auto [scale, shift] = channel_affine(norm);
    return ops::blocked_channel_affine(x, scale, shift, relu);
  }
  if (auto* gn = dynamic_cast<torch::nn::GroupNormImpl*>(norm.ptr().get())) {
    const auto& o = gn->options;
    return ops::blocked_group_norm(x, o.num_groups(), o.affine() ? gn->weight : at::Tensor(),
                                   o.affine() ? gn->bias : at::Tensor(), o.eps(), relu);
  }
  auto* bn = normalizes_by_batch(norm);
  if (bn == nullptr)
    throw Error("a norm layer other than BN, FrozenBN or GN has no form for blocked maps: " +
                norm.ptr()->name());
  const ops::BatchNormArgs a = batch_statistics_step(*bn);
  return ops::blocked_batch_norm(x, a.weight, a.bias, a.running_mean, a.running_var, a.momentum,
                                 a.eps, relu);
}

torch::nn::BatchNorm2dImpl* normalizes_by_batch(torch::nn::AnyModule& norm) {
  if (norm.is_empty()) return nullptr;
  auto* bn = dynamic_cast<torch::nn::BatchNorm2dImpl*>(norm.ptr().get());
  return bn != nullptr && (bn->is_training() || !bn->options.track_running_stats()) ? bn : nullptr;
}

ops::BatchNormArgs batch_statistics_step(torch::nn::BatchNorm2dImpl& bn) {
  // torch::nn::BatchNorm2d's training step: count the batch, momentum or a cumulative average.
  const auto& o = bn.options;
  double momentum = 0.0;
  if (o.track_running_stats()) {
    at::NoGradGuard no_grad;
    bn.num_batches_tracked.add_(1);
    momentum = o.momentum() ? *o.momentum() : 1.0 / bn.num_batches_tracked.item<double>();
  }
  return {o.affine() ? bn.weight : at::Tensor(),
          o.affine() ? bn.bias : at::Tensor(),
          o.track_running_stats() ? bn.running_mean : at::Tensor(),
          o.track_running_stats() ? bn.running_var : at::Tensor(),
          momentum,
          o.eps()};
}

std::unordered_set<const c10::TensorImpl*> normalization_parameters(
    const torch::nn::Module& model) {
  std::unordered_set<const c10::TensorImpl*> found;
  std::vector<const torch::nn::Module*> all = {&model};  // (modules(true) needs a shared_ptr)
  for (const auto& module : model.modules(/*include_self=*/false)) all.push_back(module.get());
  for (const torch::nn::Module* m : all) {
    const bool is_norm = dynamic_cast<const torch::nn::BatchNorm2dImpl*>(m) ||
                         dynamic_cast<const NaiveSyncBatchNorm2dImpl*>(m) ||
                         dynamic_cast<const torch::nn::GroupNormImpl*>(m) ||
                         dynamic_cast<const torch::nn::LayerNormImpl*>(m);
    if (!is_norm) continue;
    for (const at::Tensor& p : m->parameters(/*recurse=*/false))
      found.insert(p.unsafeGetTensorImpl());
  }
  return found;
}

}  // namespace detkit::layers
