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

/// A count each rank keeps (DATALOADER.ON_BAD_IMAGE's replaced samples: "data/bad_images"),
/// recorded unsmoothed on rank 0 as its sum over the ranks once that is above zero. With several
/// ranks every `period` iterations and at the last (one all-gather then, on every rank: the
/// writers write every 20); in one process, every iteration.
class SumOverRanksHook : public HookBase {
 public:
  SumOverRanksHook(std::string name, std::function<double()> count, int64_t period = 20)
      : name_(std::move(name)), count_(std::move(count)), period_(period) {}
  void after_step(Trainer& t) override;

 private:
  std::string name_;
  std::function<double()> count_;
  int64_t period_;
};

/// SIGTERM / SIGINT on any rank (a utils/stop_signal.h StopSignalGuard catches them): after the
/// step during which it came, every rank agrees to stop (one all-gather per step with several
/// ranks, so all stop after the same step), rank 0 writes model_{iter:07d}.pth and
/// last_checkpoint as the periodic checkpointer does, all ranks wait for it, and the trainer is
/// asked to stop. Nothing happens after the last iteration: the final checkpoint is written then.
class PreemptionHook : public HookBase {
 public:
  PreemptionHook(checkpoint::Checkpointer& checkpointer, solver::LRMultiplier& scheduler)
      : checkpointer_(checkpointer), scheduler_(scheduler) {}
  void after_step(Trainer& t) override;
  /// The signal that stopped training (the highest number when ranks got different ones); 0
  /// when none did.
  int stopped_by() const { return stopped_by_; }
  /// The checkpoint written for the stop ("" when none was, or on ranks other than 0).
  const std::string& saved() const { return saved_; }

 private:
  checkpoint::Checkpointer& checkpointer_;
  solver::LRMultiplier& scheduler_;
  int stopped_by_ = 0;
  std::string saved_;
};

/// What a training checkpoint holds besides the model: optimizer, scheduler, iteration and the
/// world size (so that a resumed run knows whether its sampler is sharded as this one's was).
checkpoint::CheckpointState training_state(Trainer& t, solver::LRMultiplier& scheduler);

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
