#include "detkit/solver/param_groups.h"

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/normalization.h>

#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "detkit/layers/sync_batch_norm.h"
#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

template <typename... Impls>
bool is_any_of(const torch::nn::Module& module) {
  return (... || (dynamic_cast<const Impls*>(&module) != nullptr));
}

// A group's identity, as Detectron2's tuple of (key, value) items: "lr" first, "weight_decay"
// second, each present or not. Python compares the floats with ==, so do we.
using GroupKey = std::pair<std::optional<double>, std::optional<double>>;

}  // namespace

std::unordered_map<const c10::TensorImpl*, std::string> parameter_names(
    const torch::nn::Module& model) {
  std::unordered_map<const c10::TensorImpl*, std::string> names;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    names.emplace(item.value().unsafeGetTensorImpl(), item.key());
  }
  return names;
}

bool is_norm_module(const torch::nn::Module& module) {
  using namespace torch::nn;  // NOLINT(build/namespaces)
  return is_any_of<BatchNorm1dImpl, BatchNorm2dImpl, BatchNorm3dImpl, GroupNormImpl,
                   InstanceNorm1dImpl, InstanceNorm2dImpl, InstanceNorm3dImpl, LayerNormImpl,
                   LocalResponseNormImpl, layers::NaiveSyncBatchNorm2dImpl>(module);
}

std::vector<ParamGroup> get_default_optimizer_params(const torch::nn::Module& model,
                                                     const ParamGroupOptions& options) {
  std::optional<double> bias_lr, bias_weight_decay;
  if (options.bias_lr_factor && *options.bias_lr_factor != 1.0) {
    if (!options.base_lr) throw Error("bias_lr_factor (SOLVER.BIAS_LR_FACTOR) requires base_lr");
    bias_lr = *options.base_lr * *options.bias_lr_factor;
  }
  bias_weight_decay = options.weight_decay_bias;

  const auto names = parameter_names(model);
  std::unordered_set<const c10::TensorImpl*> seen;
  std::vector<ParamGroup> groups;
  std::map<GroupKey, size_t> group_of_key;
  // model.modules() in pre-order; the model itself need not be held by a shared_ptr.
  std::vector<const torch::nn::Module*> modules{&model};
  for (const auto& child : model.modules(/*include_self=*/false)) modules.push_back(child.get());
  for (const torch::nn::Module* module : modules) {
    const bool norm = is_norm_module(*module);
    for (const auto& item : module->named_parameters(/*recurse=*/false)) {
      const at::Tensor& param = item.value();
      if (!param.requires_grad()) continue;
      if (!seen.insert(param.unsafeGetTensorImpl()).second) continue;
      GroupKey key{options.base_lr, options.weight_decay};
      if (norm && options.weight_decay_norm) key.second = options.weight_decay_norm;
      if (item.key() == "bias") {
        if (bias_lr) key.first = bias_lr;
        if (bias_weight_decay) key.second = bias_weight_decay;
      }
      auto [it, inserted] = group_of_key.emplace(key, groups.size());
      if (inserted) groups.push_back(ParamGroup{{}, {}, key.first, key.second});
      ParamGroup& group = groups[it->second];
      group.params.push_back(param);
      group.names.push_back(names.at(param.unsafeGetTensorImpl()));
    }
  }
  return groups;
}

}  // namespace detkit::solver
