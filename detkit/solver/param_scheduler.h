#pragma once
// fvcore's parameter schedulers (fvcore.common.param_scheduler), which Detectron2's LR schedules
// are built from: a scheduler maps training progress `where` in [0, 1] to a number (the LR
// multiplier). Same formulas, same 1e-6 boundary epsilon, same argument checks.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace detkit::solver {

class ParamScheduler {
 public:
  /// fvcore's WHERE_EPSILON: progress within this of a boundary counts as past it.
  static constexpr double kWhereEpsilon = 1e-6;

  virtual ~ParamScheduler() = default;
  /// The value at progress `where` (0 = first iteration, 1 = max_iter).
  virtual double operator()(double where) const = 0;
};

using ParamSchedulerPtr = std::shared_ptr<const ParamScheduler>;

/// `value` everywhere in [0, 1).
class ConstantParamScheduler : public ParamScheduler {
 public:
  explicit ConstantParamScheduler(double value) : value_(value) {}
  double operator()(double where) const override;

 private:
  double value_;
};

/// end * where + start * (1 - where).
class LinearParamScheduler : public ParamScheduler {
 public:
  LinearParamScheduler(double start_value, double end_value)
      : start_(start_value), end_(end_value) {}
  double operator()(double where) const override;

 private:
  double start_, end_;
};

/// Half cosine from start to end: end + 0.5 (start - end) (1 + cos(pi where)).
class CosineParamScheduler : public ParamScheduler {
 public:
  CosineParamScheduler(double start_value, double end_value)
      : start_(start_value), end_(end_value) {}
  double operator()(double where) const override;

 private:
  double start_, end_;
};

/// values[k] from milestone k-1 (inclusive) to milestone k (exclusive), with progress measured
/// in updates: update = int((where + eps) * num_updates). milestones: strictly increasing, in
/// (0, num_updates); values.size() == milestones.size() + 1.
class MultiStepParamScheduler : public ParamScheduler {
 public:
  MultiStepParamScheduler(std::vector<double> values, int64_t num_updates,
                          std::vector<int64_t> milestones);
  double operator()(double where) const override;

 private:
  std::vector<double> values_;
  int64_t num_updates_;
  std::vector<int64_t> milestones_;
};

/// base_value * gamma^k over num_decays + 1 equal parts of training.
class StepWithFixedGammaParamScheduler : public ParamScheduler {
 public:
  StepWithFixedGammaParamScheduler(double base_value, int64_t num_decays, double gamma,
                                   int64_t num_updates);
  double operator()(double where) const override;

 private:
  std::vector<double> values_;  // base_value, base_value * gamma, ... (repeated products)
};

/// Runs `schedulers` one after the other over `lengths` (fractions summing to 1). A "rescaled"
/// part sees its own progress in [0, 1]; a "fixed" part sees the global `where`.
class CompositeParamScheduler : public ParamScheduler {
 public:
  enum class Interval { kRescaled, kFixed };
  CompositeParamScheduler(std::vector<ParamSchedulerPtr> schedulers, std::vector<double> lengths,
                          std::vector<Interval> interval_scaling);
  double operator()(double where) const override;

 private:
  std::vector<ParamSchedulerPtr> schedulers_;
  std::vector<double> lengths_;
  std::vector<Interval> interval_scaling_;
};

/// Detectron2's WarmupParamScheduler: `scheduler` preceded by a warm-up over the first
/// `warmup_length` of training that starts at warmup_factor * scheduler(0) and, for "linear",
/// reaches scheduler(warmup_length); "constant" stays at the start value. With
/// `rescale_interval` the main scheduler runs over the remaining (1 - warmup_length) as if it
/// were the whole of training. An unknown `warmup_method` is a detkit::Error naming
/// SOLVER.WARMUP_METHOD and listing "linear", "constant".
ParamSchedulerPtr make_warmup_param_scheduler(ParamSchedulerPtr scheduler, double warmup_factor,
                                              double warmup_length,
                                              const std::string& warmup_method,
                                              bool rescale_interval = false);

}  // namespace detkit::solver
