#pragma once
// The hooks of Detectron2's DefaultTrainer: iteration timer, LR schedule, periodic checkpoint,
// periodic evaluation. The writers (console line, metrics.json) are in writers.h.
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "detkit/checkpoint/periodic_checkpointer.h"
#include "detkit/engine/trainer.h"
#include "detkit/solver/lr_scheduler.h"

namespace detkit::engine {

/// Records "time" (seconds of each step, hooks included) and logs the total at the end.
class IterationTimer : public HookBase {
 public:
  void before_train(Trainer& t) override;
  void after_step(Trainer& t) override;
  void after_train(Trainer& t) override;

 private:
  std::chrono::steady_clock::time_point train_start_, step_start_;
};

/// Records "lr" (of the group with the most parameters) then steps the schedule.
class LRSchedulerHook : public HookBase {
 public:
  explicit LRSchedulerHook(solver::LRMultiplier& scheduler) : scheduler_(scheduler) {}
  void after_step(Trainer& t) override;

 private:
  solver::LRMultiplier& scheduler_;
};

/// Saves model, optimizer, scheduler and iteration through a PeriodicCheckpointer.
class PeriodicCheckpointerHook : public HookBase {
 public:
  PeriodicCheckpointerHook(checkpoint::PeriodicCheckpointer& checkpointer,
                           solver::LRMultiplier& scheduler)
      : checkpointer_(checkpointer), scheduler_(scheduler) {}
  void after_step(Trainer& t) override;

 private:
  checkpoint::PeriodicCheckpointer& checkpointer_;
  solver::LRMultiplier& scheduler_;
};

/// Runs `evaluate` every `period` iterations (0: never) and after the last one; the model is put
/// in eval mode for it and back in training mode after. Results are logged by `evaluate`.
class EvalHook : public HookBase {
 public:
  EvalHook(int64_t period, std::function<void(Trainer&)> evaluate)
      : period_(period), evaluate_(std::move(evaluate)) {}
  void after_step(Trainer& t) override;
  void after_train(Trainer& t) override;

 private:
  void run(Trainer& t);
  int64_t period_;
  std::function<void(Trainer&)> evaluate_;
  int64_t last_evaluated_ = -1;
};

}  // namespace detkit::engine
