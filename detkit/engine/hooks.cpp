#include "detkit/engine/hooks.h"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "detkit/distributed/comm.h"
#include "detkit/engine/writers.h"
#include "detkit/solver/state_ivalue.h"
#include "detkit/utils/error.h"
#include "detkit/utils/stop_signal.h"

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
  t.storage().put_scalar("lr", reported_lr(t.optimizer()), /*smoothing_hint=*/false);
  scheduler_.step();
}

checkpoint::CheckpointState training_state(Trainer& t, solver::LRMultiplier& scheduler) {
  checkpoint::CheckpointState state;
  state["optimizer"] = t.optimizer().state();
  state["scheduler"] = solver::scheduler_state_to_ivalue(scheduler.state_dict());
  state["world_size"] = static_cast<int64_t>(distributed::get_world_size());
  for (auto& [key, value] : t.extra_state()) state[key] = value;
  state["iteration"] = t.iter();
  return state;
}

void PeriodicCheckpointerHook::after_step(Trainer& t) {
  if (!distributed::is_main_process()) return;  // one copy of the job's checkpoints, rank 0's
  checkpointer_.step(t.iter(), training_state(t, scheduler_));
}

void SumOverRanksHook::after_step(Trainer& t) {
  const bool several = distributed::get_world_size() > 1;
  if (several && (t.iter() + 1) % period_ != 0 && t.iter() + 1 != t.max_iter()) return;
  double total = count_();
  if (several)
    total = at::stack(distributed::communicator().all_gather(at::full({1}, total, at::kDouble)))
                .sum()
                .item<double>();
  if (total > 0 && distributed::is_main_process())
    t.storage().put_scalar(name_, total, /*smoothing_hint=*/false);
}

namespace {
// The stop signal every rank agrees on: the highest any rank got (0: none).
int agreed_stop_signal() {
  const int mine = stop_requested();
  if (distributed::get_world_size() == 1) return mine;
  const at::Tensor all =
      at::stack(distributed::communicator().all_gather(at::full({1}, mine, at::kInt)));
  return all.max().item<int>();
}
}  // namespace

void PreemptionHook::after_step(Trainer& t) {
  if (t.iter() + 1 >= t.max_iter()) return;  // training is over: model_final is being written
  const int sig = agreed_stop_signal();
  if (sig == 0) return;
  stopped_by_ = sig;
  if (distributed::is_main_process()) {
    const std::string name = fmt::format("model_{:07d}", t.iter());
    const std::string last = checkpointer_.last_checkpoint();
    // The periodic checkpointer may have written this very iteration already.
    if (std::filesystem::path(last).filename() == name + ".pth")
      saved_ = last;
    else
      saved_ = checkpointer_.save(name, training_state(t, scheduler_));
  }
  spdlog::info("{} received: stopping after iteration {}{}", signal_name(sig), t.iter(),
               saved_.empty() ? "" : ", checkpoint " + saved_);
  distributed::synchronize();  // rank 0's checkpoint is on disk before any rank exits
  t.request_stop();
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
