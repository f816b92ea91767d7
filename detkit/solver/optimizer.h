#pragma once
// What the trainer, the LR scheduler and the checkpoint hooks use of an optimizer (PyTorch's
// torch.optim.Optimizer, narrowed): parameter groups with their lr, a step that may be skipped
// (mixed precision skips one on inf/NaN gradients), and the state a checkpoint holds, in
// PyTorch's optimizer.state_dict() layout. SGD is one implementation; a wrapper that decides
// whether to step (a loss scaler) is another.
#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <optional>
#include <string>
#include <vector>

namespace detkit::solver {

/// What every optimizer's parameter group has (PyTorch's param_groups[i]).
struct OptimizerGroup {
  std::vector<at::Tensor> params;
  std::vector<std::string> names;  // state-dict names, parallel to params
  double lr = 0;
  double weight_decay = 0;
  std::optional<double> initial_lr;  // set by the LR scheduler, as PyTorch's "initial_lr"
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  /// One update from the current gradients. Returns false when the step was skipped: no
  /// parameter and no optimizer state changed.
  virtual bool step() = 0;
  /// Zeroes existing gradients in place, or drops them (PyTorch's zero_grad(set_to_none)).
  virtual void zero_grad(bool set_to_none) = 0;

  virtual size_t num_groups() const = 0;
  virtual OptimizerGroup& group(size_t g) = 0;
  const OptimizerGroup& group(size_t g) const { return const_cast<Optimizer*>(this)->group(g); }

  /// The checkpoint's "optimizer" entry (tensors are copies: later steps do not change it).
  virtual c10::IValue state() const = 0;
  /// Restores state(); a state of another optimizer, or of other groups, is a detkit::Error
  /// naming the entry, raised before anything changes.
  virtual void load_state(const c10::IValue& state) = 0;

  /// Every parameter, group by group (what gradient averaging and unscaling walk).
  std::vector<at::Tensor> parameters() const;
};

}  // namespace detkit::solver
