#pragma once
// The training loop (Detectron2's TrainerBase + SimpleTrainer): each iteration fetches a batch,
// computes the loss dict, checks it is finite, backpropagates and steps the optimizer; hooks run
// before/after training and before/after each step (timer, LR schedule, checkpoints,
// evaluation, writers). Randomness inside a step (anchor/proposal sampling) is seeded from (seed,
// iteration) so a resumed run repeats the uninterrupted one exactly.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "detkit/engine/event_storage.h"
#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/solver/sgd.h"

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

using BatchSource = std::function<std::vector<modeling::ModelInput>()>;

class Trainer {
 public:
  Trainer(std::shared_ptr<modeling::GeneralizedRCNN> model, solver::SGD& optimizer,
          BatchSource data, uint64_t seed);

  void register_hook(std::shared_ptr<HookBase> hook) { hooks_.push_back(std::move(hook)); }
  /// Runs iterations start_iter .. max_iter - 1.
  void train(int64_t start_iter, int64_t max_iter);
  /// One iteration: batch, losses (non-finite: detkit::Error naming the iteration and every
  /// loss term, before any weight changes), backward, optimizer step.
  void run_step();

  int64_t iter() const { return iter_; }
  int64_t start_iter() const { return start_iter_; }
  int64_t max_iter() const { return max_iter_; }
  EventStorage& storage() { return storage_; }
  modeling::GeneralizedRCNN& model() { return *model_; }
  const std::shared_ptr<modeling::GeneralizedRCNN>& model_ptr() const { return model_; }
  solver::SGD& optimizer() { return optimizer_; }

 private:
  std::shared_ptr<modeling::GeneralizedRCNN> model_;
  solver::SGD& optimizer_;
  BatchSource data_;
  uint64_t seed_;
  std::vector<std::shared_ptr<HookBase>> hooks_;
  EventStorage storage_;
  int64_t iter_ = 0, start_iter_ = 0, max_iter_ = 0;
};

/// The seed of iteration `iter`'s in-step randomness (sampling of anchors and proposals).
uint64_t iteration_seed(uint64_t seed, int64_t iter);

}  // namespace detkit::engine
