#pragma once
// Detectron2's AMPTrainer: the Trainer with three phases replaced. forward runs the model and
// its losses under autocast (SOLVER.AMP.PRECISION; the losses come back as fp32); backward runs
// on the total loss times the loss scale; optimizer_step first divides the gradients by the
// scale (so SOLVER.CLIP_GRADIENTS, applied by the optimizer, sees true values), then steps, or
// skips the step when a gradient is inf or NaN (weights and optimizer state untouched, the LR
// schedule advancing with the iteration as Detectron2's hooks do), then updates the scale.
// With several ranks the gradients are averaged before that check, so an inf on one rank is an
// inf on all of them and every rank skips the same step.
// A non-finite loss is not an overflow: sum_losses stops training on it, naming the terms.
// Records "[metric]grad_scaler" (the scale this step's backward used, Detectron2's name) and
// "amp/skipped_steps" (steps skipped so far in this run) in the event storage.
// With fp32 master weights (O2, solver/master_weights.h) the model's trained weights are in the
// reduced precision: the step moves their gradients to the masters before unscaling, steps the
// masters, rounds them back into the model, and checkpoints hold the masters under the model's
// names (so an O2 checkpoint is an fp32 one, and resumes exactly).
#include <c10/core/ScalarType.h>

#include "detkit/engine/trainer.h"
#include "detkit/solver/amp.h"
#include "detkit/solver/grad_scaler.h"
#include "detkit/solver/master_weights.h"

namespace detkit::engine {

class AMPTrainer : public Trainer {
 public:
  AMPTrainer(std::shared_ptr<modeling::MetaArch> model, solver::Optimizer& optimizer,
             BatchSource data, uint64_t seed, solver::GradScaler& scaler,
             c10::ScalarType precision = c10::kBFloat16,
             solver::OptLevel opt_level = solver::OptLevel::O1);

  /// {"grad_scaler": the scaler's state, in PyTorch's GradScaler.state_dict() layout}; with O2
  /// also "model": the fp32 masters by name.
  std::map<std::string, c10::IValue> extra_state() const override;
  std::vector<at::Tensor> trained_parameters() const override;
  solver::GradScaler& scaler() { return scaler_; }
  /// O2's masters; null with O1.
  const solver::MasterWeights* master_weights() const { return masters_.get(); }

 protected:
  structures::LossDict forward(const std::vector<structures::ModelInput>& batch) override;
  void backward(const at::Tensor& total) override;
  void optimizer_step() override;

 private:
  solver::GradScaler& scaler_;
  c10::ScalarType precision_;
  std::unique_ptr<solver::MasterWeights> masters_;  // O2
};

/// The trainer SOLVER.AMP asks for: an AMPTrainer over `scaler` (which must outlive it) when
/// amp.enabled, else a Trainer. With O2 the model's trained weights (but its normalisation
/// layers') are cast to amp.precision here: load checkpoints before.
std::unique_ptr<Trainer> build_trainer(const solver::AmpOptions& amp, solver::GradScaler* scaler,
                                       std::shared_ptr<modeling::MetaArch> model,
                                       solver::Optimizer& optimizer, BatchSource data,
                                       uint64_t seed);

}  // namespace detkit::engine
