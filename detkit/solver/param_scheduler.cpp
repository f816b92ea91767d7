#include "detkit/solver/param_scheduler.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

std::string to_text(double v) {
  std::ostringstream out;
  out.precision(17);
  out << v;
  return out.str();
}

[[noreturn]] void out_of_range(const char* scheduler, double where) {
  throw Error(std::string(scheduler) + ": where must be in [0, 1], got " + to_text(where) +
              " (the LR schedule was stepped past SOLVER.MAX_ITER)");
}

}  // namespace

double ConstantParamScheduler::operator()(double where) const {
  if (where >= 1.0) out_of_range("ConstantParamScheduler", where);
  return value_;
}

double LinearParamScheduler::operator()(double where) const {
  return end_ * where + start_ * (1 - where);
}

double CosineParamScheduler::operator()(double where) const {
  return end_ + 0.5 * (start_ - end_) * (1 + std::cos(M_PI * where));
}

MultiStepParamScheduler::MultiStepParamScheduler(std::vector<double> values, int64_t num_updates,
                                                 std::vector<int64_t> milestones)
    : values_(std::move(values)), num_updates_(num_updates), milestones_(std::move(milestones)) {
  if (milestones_.size() + 1 != values_.size()) {
    throw Error("MultiStepParamScheduler needs " + std::to_string(values_.size() - 1) +
                " milestones, got " + std::to_string(milestones_.size()));
  }
  if (num_updates_ < static_cast<int64_t>(values_.size())) {
    throw Error(
        "MultiStepParamScheduler: num_updates (SOLVER.MAX_ITER = " + std::to_string(num_updates_) +
        ") must be at least the number of values (" + std::to_string(values_.size()) + ")");
  }
  int64_t start = 0;
  for (int64_t milestone : milestones_) {
    if (milestone >= num_updates_) {
      throw Error("SOLVER.STEPS: milestone " + std::to_string(milestone) +
                  " must be smaller than the number of updates (SOLVER.MAX_ITER = " +
                  std::to_string(num_updates_) + ")");
    }
    if (start >= milestone) {
      throw Error("SOLVER.STEPS must be strictly increasing and positive: milestone " +
                  std::to_string(milestone) + " follows " + std::to_string(start));
    }
    start = milestone;
  }
}

double MultiStepParamScheduler::operator()(double where) const {
  if (where > 1.0) out_of_range("MultiStepParamScheduler", where);
  const auto update = static_cast<int64_t>((where + kWhereEpsilon) * num_updates_);
  const auto k =
      std::upper_bound(milestones_.begin(), milestones_.end(), update) - milestones_.begin();
  return values_[k];
}

StepWithFixedGammaParamScheduler::StepWithFixedGammaParamScheduler(double base_value,
                                                                   int64_t num_decays, double gamma,
                                                                   int64_t num_updates) {
  if (!(base_value > 0) || !(gamma > 0)) {
    throw Error("StepWithFixedGammaParamScheduler: base_value and gamma (SOLVER.GAMMA = " +
                to_text(gamma) + ") must be positive numbers");
  }
  if (num_decays <= 0 || num_updates <= 0) {
    throw Error("StepWithFixedGammaParamScheduler: SOLVER.NUM_DECAYS (" +
                std::to_string(num_decays) + ") and SOLVER.MAX_ITER (" +
                std::to_string(num_updates) + ") must be positive integers");
  }
  values_.push_back(base_value);
  for (int64_t k = 0; k < num_decays; ++k) values_.push_back(values_.back() * gamma);
}

double StepWithFixedGammaParamScheduler::operator()(double where) const {
  if (where > 1.0) out_of_range("StepWithFixedGammaParamScheduler", where);
  const auto n = static_cast<int64_t>(values_.size());
  const auto index = static_cast<int64_t>((where + kWhereEpsilon) * static_cast<double>(n));
  // fvcore indexes past the end at where == 1 (the step after the last iteration); that step's
  // value is never used for an update, so it gets the last value instead of an error.
  return values_[std::min(index, n - 1)];
}

CompositeParamScheduler::CompositeParamScheduler(std::vector<ParamSchedulerPtr> schedulers,
                                                 std::vector<double> lengths,
                                                 std::vector<Interval> interval_scaling)
    : schedulers_(std::move(schedulers)),
      lengths_(std::move(lengths)),
      interval_scaling_(std::move(interval_scaling)) {
  if (schedulers_.size() != lengths_.size() || schedulers_.size() != interval_scaling_.size()) {
    throw Error("CompositeParamScheduler: schedulers, lengths and interval_scaling differ in size");
  }
  if (schedulers_.empty()) throw Error("CompositeParamScheduler needs at least one scheduler");
  double sum = 0;
  for (double length : lengths_) sum += length;
  if (std::abs(sum - 1.0) >= 1e-3) {
    throw Error("CompositeParamScheduler: lengths must sum to 1, got " + to_text(sum));
  }
  if (sum != 1.0) {
    double head = 0;
    for (size_t i = 0; i + 1 < lengths_.size(); ++i) head += lengths_[i];
    lengths_.back() = 1.0 - head;
  }
}

double CompositeParamScheduler::operator()(double where) const {
  size_t i = 0;
  double running_total = lengths_[0];
  while (where + kWhereEpsilon > running_total && i + 1 < schedulers_.size()) {
    ++i;
    running_total += lengths_[i];
  }
  double scheduler_where = where;
  if (interval_scaling_[i] == Interval::kRescaled) {
    if (lengths_[i] == 0) {
      throw Error("CompositeParamScheduler: a rescaled part of length 0 cannot be evaluated");
    }
    const double start = running_total - lengths_[i];
    scheduler_where = (where - start) / lengths_[i];
  }
  return (*schedulers_[i])(scheduler_where);
}

ParamSchedulerPtr make_warmup_param_scheduler(ParamSchedulerPtr scheduler, double warmup_factor,
                                              double warmup_length,
                                              const std::string& warmup_method,
                                              bool rescale_interval) {
  const double end_value = (*scheduler)(warmup_length);
  const double start_value = warmup_factor * (*scheduler)(0.0);
  ParamSchedulerPtr warmup;
  if (warmup_method == "constant") {
    warmup = std::make_shared<ConstantParamScheduler>(start_value);
  } else if (warmup_method == "linear") {
    warmup = std::make_shared<LinearParamScheduler>(start_value, end_value);
  } else {
    throw Error("unknown SOLVER.WARMUP_METHOD '" + warmup_method +
                "'; valid: 'linear', 'constant'");
  }
  using Interval = CompositeParamScheduler::Interval;
  return std::make_shared<CompositeParamScheduler>(
      std::vector<ParamSchedulerPtr>{std::move(warmup), std::move(scheduler)},
      std::vector<double>{warmup_length, 1 - warmup_length},
      std::vector<Interval>{Interval::kRescaled,
                            rescale_interval ? Interval::kRescaled : Interval::kFixed});
}

}  // namespace detkit::solver
