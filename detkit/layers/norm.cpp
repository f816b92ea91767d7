#include "detkit/layers/norm.h"

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/normalization.h>

#include "detkit/layers/frozen_batch_norm.h"
#include "detkit/layers/sync_batch_norm.h"
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
