#pragma once
// The training loop (Detectron2's TrainerBase + SimpleTrainer). Each iteration runs the phases
// of run_step(), each a virtual method so that a variant replaces one phase instead of copying
// the loop (mixed precision: backward and optimizer_step; data-parallel training:
// synchronize_gradients):
//
//   fetch_batch -> forward (the loss dict) -> sum_losses (finite check, metrics) -> backward
//   -> synchronize_gradients -> optimizer_step
//
// Hooks run before/after training and before/after each step (timer, LR schedule, checkpoints,
// evaluation, writers). Any exception raised inside a step, a TORCH_CHECK of an op included,
// reaches the caller as a detkit::Error that names the iteration, the learning rate and this
// rank's images of the batch; when it is about non-finite values (a loss, Detectron2's checks of
// predicted boxes) the anomaly pass adds where the first non-finite value appeared. Randomness inside a
// step (anchor/proposal sampling) comes from each image's own generator where the loader seeded
// it (ModelInput::sampling_seed, from the sample's stream position), otherwise from the default
// generator seeded with (seed, iteration, rank), so a resumed run repeats the uninterrupted one
// exactly.
#include <ATen/core/ivalue.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "detkit/distributed/gradient_reducer.h"
#include "detkit/engine/event_storage.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/solver/optimizer.h"
#include "detkit/utils/gpu.h"

namespace detkit::engine {

class Trainer;

class HookBase {
 public:
  virtual ~HookBase() = default;
  virtual void before_train(Trainer&) {}
  virtual void before_step(Trainer&) {}
  virtual void after_step(Trainer&) {}
  virtual void after_train(Trainer&) {}
};

using BatchSource = std::function<std::vector<structures::ModelInput>()>;

class Trainer {
 public:
  Trainer(std::shared_ptr<modeling::MetaArch> model, solver::Optimizer& optimizer, BatchSource data,
          uint64_t seed);
  virtual ~Trainer() = default;

  void register_hook(std::shared_ptr<HookBase> hook) { hooks_.push_back(std::move(hook)); }
  /// With several ranks whose batches are slices of one global batch (data/loader.h, world-size
  /// invariant): every rank pads its images to the largest of the global batch (one all-gather of
  /// two numbers per step), as one process holding the whole batch would. Off: each rank pads its
  /// own batch (Detectron2's).
  void set_pad_to_global_batch(bool on) { pad_to_global_batch_ = on; }
  /// Runs iterations start_iter .. max_iter - 1, or up to the one after which a hook called
  /// request_stop(); iter() is then the last iteration run.
  void train(int64_t start_iter, int64_t max_iter);
  /// Ends train() once every hook's after_step of this iteration has run (after_train hooks
  /// still run): how a signal stops training at a step boundary.
  void request_stop() { stop_requested_ = true; }
  /// Whether the last train() ended on request_stop() before max_iter.
  bool stopped_early() const { return stop_requested_ && iter_ + 1 < max_iter_; }
  /// One iteration: the phases above, in order.
  void run_step();

  int64_t iter() const { return iter_; }
  int64_t start_iter() const { return start_iter_; }
  int64_t max_iter() const { return max_iter_; }
  EventStorage& storage() { return storage_; }
  /// On a GPU, the share of the previous step the GPU sat idle waiting for the host before its
  /// work began (GpuStepClock), once the GPU has finished it; -1 on the CPU or before that.
  double gpu_idle_share() { return gpu_clock_.idle_share(); }
  modeling::MetaArch& model() { return *model_; }
  const std::shared_ptr<modeling::MetaArch>& model_ptr() const { return model_; }
  solver::Optimizer& optimizer() { return optimizer_; }
  /// Steps the optimizer skipped so far in this train() (a loss scaler's overflow steps).
  int64_t skipped_steps() const { return skipped_steps_; }
  /// What a checkpoint holds of this trainer besides model, optimizer and schedule (a loss
  /// scaler's "grad_scaler"; a "model" entry, a dict of tensors, replaces the model's tensors of
  /// those names: O2's fp32 masters); nothing here.
  virtual std::map<std::string, c10::IValue> extra_state() const { return {}; }
  /// The model's tensors backward gives gradients to, parallel to optimizer().parameters(): the
  /// same tensors here; O2's reduced-precision weights where the optimizer holds their masters.
  virtual std::vector<at::Tensor> trained_parameters() const { return optimizer_.parameters(); }
  /// With several ranks, the last step's gradient communication: its length, and the part of it
  /// backward did not hide; zeros in one process.
  distributed::ReductionTiming last_gradient_reduction() const {
    return reducer_ ? reducer_->last_timing() : distributed::ReductionTiming{};
  }

 protected:
  /// The next batch (padded to the global batch's size where set_pad_to_global_batch says);
  /// records "data_time" (with several ranks sum_losses does, as the maximum over the ranks).
  virtual std::vector<structures::ModelInput> fetch_batch();
  /// The loss dict of `batch`, with the in-step generator seeded for this iteration; the scalars
  /// the model records meanwhile (utils/event_scalars.h) go to storage().
  virtual structures::LossDict forward(const std::vector<structures::ModelInput>& batch);
  /// Their sum; records each loss and "total_loss" (with several ranks, their means over the
  /// ranks, and "data_time", its maximum). A non-finite sum is a detkit::Error naming every term,
  /// raised before any weight changes; with several ranks every rank raises it at the same step,
  /// naming the rank.
  virtual at::Tensor sum_losses(const structures::LossDict& losses);
  /// Fresh gradients of `total` (the previous step's are dropped first).
  virtual void backward(const at::Tensor& total);
  /// Data-parallel training: every gradient becomes its mean over the ranks (a
  /// distributed::GradientReducer, whose buckets travel while backward runs; a parameter without
  /// a gradient is an error naming it); nothing in one process.
  virtual void synchronize_gradients();
  /// Applies the gradients; a step the optimizer skips is counted (skipped_steps()).
  virtual void optimizer_step();
  /// For a phase that decides itself not to step (a loss scaler's overflow).
  void count_skipped_step() { ++skipped_steps_; }

 private:
  std::shared_ptr<modeling::MetaArch> model_;
  solver::Optimizer& optimizer_;
  BatchSource data_;
  uint64_t seed_;
  std::vector<std::shared_ptr<HookBase>> hooks_;
  EventStorage storage_;
  int64_t iter_ = 0, start_iter_ = 0, max_iter_ = 0, skipped_steps_ = 0;
  bool stop_requested_ = false;
  bool pad_to_global_batch_ = false;
  double data_time_ = 0;                  // this rank's wait for the current batch
  GpuStepClock gpu_clock_;                // where each step's GPU work begins and ends
  std::vector<std::string> batch_files_;  // the current batch's images, for step_context()
  std::vector<structures::ModelInput> batch_;  // the batch of the step running, for the report
  /// "; lr 0.02; this rank's images: a.jpg, b.jpg": what an error inside a step adds.
  std::string step_context() const;
  /// "the batch of 2 image(s) 3x800x1216, 3x800x1333": what an out-of-memory error adds.
  std::string batch_shapes() const;
  /// What an error about non-finite values adds: "; anomaly pass: ..." (anomaly_pass.h), from
  /// the step's forward run again on its batch; nothing for other errors.
  std::string divergence_report(const std::string& error);
  // Several ranks: averages the gradients, overlapping backward (made by train()).
  std::unique_ptr<distributed::GradientReducer> reducer_;
};

/// The learning rate Detectron2 reports: that of the group with the most parameters (0 when
/// there is no group).
double reported_lr(const solver::Optimizer& optimizer);

/// The seed of iteration `iter`'s in-step randomness (sampling of anchors and proposals) on
/// `rank`: ranks sample differently from one another, each the same on every run.
uint64_t iteration_seed(uint64_t seed, int64_t iter, int rank = 0);

/// Every input of `batch` padded to at least the largest image (height, width) of all ranks'
/// batches, as the model pads one batch (one all-gather): what set_pad_to_global_batch does to
/// each training batch.
void pad_to_largest_over_ranks(std::vector<structures::ModelInput>& batch);

/// Gives every rank rank 0's parameters and buffers, as DDP does when it wraps a model; nothing
/// in a world of one.
void broadcast_weights_from_main(modeling::MetaArch& model);

}  // namespace detkit::engine
