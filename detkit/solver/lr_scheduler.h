#pragma once
// Detectron2's LRMultiplier: every parameter group's lr is its initial lr times a
// ParamScheduler evaluated at last_epoch / max_iter, with PyTorch's _LRScheduler stepping
// (construction already takes the first step, to last_epoch 0). State as Detectron2 saves it:
// {"base_lrs": [...], "last_epoch": N}.
#include <cstdint>
#include <vector>

#include "detkit/solver/param_scheduler.h"
#include "detkit/solver/optimizer.h"

namespace detkit::solver {

struct LRSchedulerState {
  std::vector<double> base_lrs;  // one per parameter group
  int64_t last_epoch = -1;       // the iteration whose lr the optimizer holds
};

class LRMultiplier {
 public:
  /// With last_iter == -1, records each group's lr as its initial_lr (unless already set) and
  /// steps to iteration 0; otherwise every group must carry an initial_lr (PyTorch's rule) and
  /// the scheduler steps to last_iter + 1. `optimizer` must outlive this scheduler.
  LRMultiplier(Optimizer& optimizer, ParamSchedulerPtr multiplier, int64_t max_iter,
               int64_t last_iter = -1);

  /// Advances one iteration and sets every group's lr to get_lr().
  void step();
  /// base_lr * multiplier(last_epoch / max_iter), per group.
  std::vector<double> get_lr() const;
  /// The lrs the last step() set.
  const std::vector<double>& get_last_lr() const { return last_lr_; }

  int64_t last_epoch() const { return last_epoch_; }
  int64_t max_iter() const { return max_iter_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  const ParamScheduler& multiplier() const { return *multiplier_; }

  LRSchedulerState state_dict() const { return {base_lrs_, last_epoch_}; }
  /// Restores base_lrs and last_epoch (one base lr per group, else detkit::Error) and sets each
  /// group's lr to get_lr(), the value a resumed optimizer's state holds anyway.
  void load_state_dict(const LRSchedulerState& state);

 private:
  void apply(const std::vector<double>& lrs);

  Optimizer* optimizer_;
  ParamSchedulerPtr multiplier_;
  int64_t max_iter_;
  int64_t last_epoch_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
};

}  // namespace detkit::solver
