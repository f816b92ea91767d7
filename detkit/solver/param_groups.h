#pragma once
// Detectron2's get_default_optimizer_params: every trainable parameter of a model exactly once,
// with per-parameter hyper-parameter overrides (norm layers, biases), then merged into as few
// groups as possible, in Detectron2's order (so optimizer state indices match its checkpoints).
#include <torch/nn/module.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace detkit::solver {

/// The arguments of Detectron2's get_default_optimizer_params (None = std::nullopt).
struct ParamGroupOptions {
  std::optional<double> base_lr;               // lr of every group; unset: the optimizer's
  std::optional<double> weight_decay;          // weight decay of every group; unset: optimizer's
  std::optional<double> weight_decay_norm;     // override for parameters of norm layers
  std::optional<double> bias_lr_factor = 1.0;  // lr of "bias" parameters = base_lr * this
  std::optional<double> weight_decay_bias;     // override for "bias" parameters
};

/// Parameters sharing hyper-parameters. Unset values fall back to the optimizer's defaults
/// (and, as in Detectron2, an explicit value equal to the default still makes its own group).
struct ParamGroup {
  std::vector<at::Tensor> params;
  std::vector<std::string> names;  // dotted state-dict names, parallel to params
  std::optional<double> lr;
  std::optional<double> weight_decay;
};

/// Dotted names of all parameters of `model`, by tensor; the first name wins for shared ones.
std::unordered_map<const c10::TensorImpl*, std::string> parameter_names(
    const torch::nn::Module& model);

/// True for the module types Detectron2 treats as normalisation layers: BatchNorm1d/2d/3d,
/// GroupNorm, InstanceNorm1d/2d/3d, LayerNorm, LocalResponseNorm (torch::nn's). detkit's
/// FrozenBatchNorm2d has no parameters, so it needs no entry.
bool is_norm_module(const torch::nn::Module& module);

/// Walks model.modules() in pre-order and each module's own parameters in registration order,
/// skipping frozen (requires_grad false) and already-seen parameters. A parameter of a norm
/// module gets weight_decay_norm; a parameter whose own name is "bias" gets the bias overrides
/// (these win over the norm one). Groups come in the order their first parameter was met.
/// Throws detkit::Error when bias_lr_factor != 1 without base_lr.
std::vector<ParamGroup> get_default_optimizer_params(const torch::nn::Module& model,
                                                     const ParamGroupOptions& options);

}  // namespace detkit::solver
