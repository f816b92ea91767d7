#include "detkit/solver/lr_scheduler.h"

#include "detkit/utils/error.h"

namespace detkit::solver {

LRMultiplier::LRMultiplier(Optimizer& optimizer, ParamSchedulerPtr multiplier, int64_t max_iter,
                           int64_t last_iter)
    : optimizer_(&optimizer),
      multiplier_(std::move(multiplier)),
      max_iter_(max_iter),
      last_epoch_(last_iter) {
  if (!multiplier_) throw Error("LRMultiplier needs a ParamScheduler");
  if (max_iter_ <= 0) {
    throw Error("SOLVER.MAX_ITER must be positive, got " + std::to_string(max_iter_));
  }
  for (size_t g = 0; g < optimizer_->num_groups(); ++g) {
    OptimizerGroup& group = optimizer_->group(g);
    if (last_iter == -1) {
      if (!group.initial_lr) group.initial_lr = group.lr;
    } else if (!group.initial_lr) {
      throw Error("resuming an LR schedule at iteration " + std::to_string(last_iter) +
                  ": parameter group " + std::to_string(g) + " has no initial_lr");
    }
    base_lrs_.push_back(*group.initial_lr);
  }
  step();
}

void LRMultiplier::step() {
  ++last_epoch_;
  apply(get_lr());
}

std::vector<double> LRMultiplier::get_lr() const {
  const double where = static_cast<double>(last_epoch_) / static_cast<double>(max_iter_);
  const double factor = (*multiplier_)(where);
  std::vector<double> lrs;
  for (double base_lr : base_lrs_) lrs.push_back(base_lr * factor);
  return lrs;
}

void LRMultiplier::load_state_dict(const LRSchedulerState& state) {
  if (state.base_lrs.size() != optimizer_->num_groups()) {
    throw Error("LR scheduler state has " + std::to_string(state.base_lrs.size()) +
                " base_lrs, the optimizer " + std::to_string(optimizer_->num_groups()) +
                " parameter groups");
  }
  base_lrs_ = state.base_lrs;
  last_epoch_ = state.last_epoch;
  apply(get_lr());
}

void LRMultiplier::apply(const std::vector<double>& lrs) {
  for (size_t g = 0; g < optimizer_->num_groups(); ++g) optimizer_->group(g).lr = lrs[g];
  last_lr_ = lrs;
}

}  // namespace detkit::solver
