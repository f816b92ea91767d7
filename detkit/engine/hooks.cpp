#include "detkit/engine/hooks.h"

#include <spdlog/spdlog.h>

#include "detkit/distributed/comm.h"
#include "detkit/engine/writers.h"
#include "detkit/solver/state_ivalue.h"
#include "detkit/utils/error.h"

namespace detkit::engine {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

void IterationTimer::before_train(Trainer&) {
  train_start_ = step_start_ = std::chrono::steady_clock::now();
}

void IterationTimer::after_step(Trainer& t) {
  t.storage().put_scalar("time", seconds_since(step_start_));
  step_start_ = std::chrono::steady_clock::now();
}

void IterationTimer::after_train(Trainer& t) {
  int64_t iterations = t.iter() + 1 - t.start_iter();
  double total = seconds_since(train_start_);
  spdlog::info("Overall training speed: {} iterations in {} ({:.4f} s / it)", iterations,
               hms(total), iterations > 0 ? total / iterations : 0.0);
}

void LRSchedulerHook::after_step(Trainer& t) {
  // Detectron2's LRScheduler hook: the lr of the group with the most parameters.
  const solver::Optimizer& opt = t.optimizer();
  size_t best = 0;
  for (size_t g = 1; g < opt.num_groups(); ++g)
    if (opt.group(g).params.size() > opt.group(best).params.size()) best = g;
  t.storage().put_scalar("lr", opt.num_groups() == 0 ? 0.0 : opt.group(best).lr,
                         /*smoothing_hint=*/false);
  scheduler_.step();
}

void PeriodicCheckpointerHook::after_step(Trainer& t) {
  if (!distributed::is_main_process()) return;  // one copy of the job's checkpoints, rank 0's
  checkpoint::CheckpointState state;
  state["optimizer"] = t.optimizer().state();
  state["scheduler"] = solver::scheduler_state_to_ivalue(scheduler_.state_dict());
  // So that a resumed run knows whether its sampler is sharded as this one's was.
  state["world_size"] = static_cast<int64_t>(distributed::get_world_size());
  checkpointer_.step(t.iter(), state);
}

void EvalHook::run(Trainer& t) {
  if (last_evaluated_ == t.iter()) return;
  last_evaluated_ = t.iter();
  t.model().eval();
  evaluate_(t);
  t.model().train();
}

void EvalHook::after_step(Trainer& t) {
  int64_t next = t.iter() + 1;
  if (period_ > 0 && next % period_ == 0 && next != t.max_iter()) run(t);
}

void EvalHook::after_train(Trainer& t) {
  if (t.iter() + 1 >= t.max_iter()) run(t);
}

}  // namespace detkit::engine
