#pragma once
// SGD with momentum, dampening, Nesterov and weight decay: the arithmetic of PyTorch's
// torch.optim.SGD (single-tensor path), per parameter p with gradient g:
//   g = g + weight_decay * p
//   b = g (first step), else b = momentum * b + (1 - dampening) * g
//   g = g + momentum * b (nesterov), else g = b
//   p = p - lr * g
// in one pass over each float32 parameter (sgd_kernel.h), with ATen's roundings.
// Optional per-parameter gradient clipping before each step, as Detectron2's
// maybe_add_gradient_clipping. State (momentum buffers, group hyper-parameters) round-trips
// through SGDState, laid out as PyTorch's optimizer.state_dict(). Implements Optimizer.
#include <torch/arg.h>

#include <optional>
#include <string>
#include <vector>

#include "detkit/solver/grad_clip.h"
#include "detkit/solver/optimizer.h"
#include "detkit/solver/param_groups.h"
#include "detkit/solver/sgd_state.h"

namespace detkit::solver {

/// Defaults for groups that do not set their own value (torch.optim.SGD's arguments).
struct SGDOptions {
  explicit SGDOptions(double lr) : lr_(lr) {}
  TORCH_ARG(double, lr);
  TORCH_ARG(double, momentum) = 0;
  TORCH_ARG(double, dampening) = 0;
  TORCH_ARG(double, weight_decay) = 0;
  TORCH_ARG(bool, nesterov) = false;
};

/// One parameter group with its resolved hyper-parameters (PyTorch's param_groups[i]).
struct SGDParamGroup : OptimizerGroup {
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;
  std::vector<at::Tensor> momentum_buffers;  // parallel to params; undefined until first used
};

class SGD : public Optimizer {
 public:
  /// Throws detkit::Error for a negative lr, momentum or weight decay, or for nesterov without
  /// positive momentum and zero dampening (PyTorch's checks).
  SGD(std::vector<ParamGroup> groups, const SGDOptions& defaults);
  SGD(const SGD&) = delete;
  SGD& operator=(const SGD&) = delete;

  /// Runs `clipper` on every parameter (with or without a gradient) before each step.
  void set_gradient_clipper(GradientClipper clipper) { clipper_ = std::move(clipper); }

  /// One update of every parameter that has a gradient; never skips (returns true).
  bool step() override;
  /// PyTorch 1.13's zero_grad(): zeroes existing gradients in place (or drops them).
  void zero_grad(bool set_to_none = false) override;

  size_t num_groups() const override { return groups_.size(); }
  OptimizerGroup& group(size_t g) override { return groups_.at(g); }
  /// optimizer_state_to_ivalue(state_dict()) / load_state_dict(optimizer_state_from_ivalue(...)).
  c10::IValue state() const override;
  void load_state(const c10::IValue& state) override;

  std::vector<SGDParamGroup>& param_groups() { return groups_; }
  const std::vector<SGDParamGroup>& param_groups() const { return groups_; }
  const SGDOptions& defaults() const { return defaults_; }

  /// Names of all parameters in state index order (group by group): entry i names the
  /// parameter whose momentum buffer is SGDState::momentum_buffers[i].
  std::vector<std::string> param_names() const;

  /// A copy of the state: buffers are cloned, so later steps do not change it.
  SGDState state_dict() const;
  /// Restores a state from state_dict() (of an optimizer over the same groups): group count and
  /// sizes, and each buffer's shape, must match, else detkit::Error naming the entry. Restores
  /// every group's lr, momentum, dampening, weight_decay, nesterov and initial_lr.
  void load_state_dict(const SGDState& state);

 private:
  // Updates parameter i of `group` (which has a gradient) in one pass (sgd_kernel.h) where it,
  // its gradient and its momentum buffer (from the second step on) are contiguous float32 CPU
  // tensors; returns false, having changed nothing, otherwise: the op-by-op path then updates it.
  bool fused_step(SGDParamGroup& group, size_t i);
  /// The group's CUDA float parameters in torch's multi-tensor kernel (sgd_multi_tensor.h);
  /// which parameters it updated.
  std::vector<char> multi_tensor_step(SGDParamGroup& group);

  SGDOptions defaults_;
  std::vector<SGDParamGroup> groups_;
  GradientClipper clipper_;
};

}  // namespace detkit::solver
