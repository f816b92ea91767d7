#include "detkit/engine/amp_trainer.h"

#include <ATen/ATen.h>

#include "detkit/layers/norm.h"
#include "detkit/solver/state_ivalue.h"
#include "detkit/utils/autocast.h"
#include "detkit/utils/error.h"

namespace detkit::engine {

AMPTrainer::AMPTrainer(std::shared_ptr<modeling::MetaArch> model, solver::Optimizer& optimizer,
                       BatchSource data, uint64_t seed, solver::GradScaler& scaler,
                       c10::ScalarType precision, solver::OptLevel opt_level)
    : Trainer(std::move(model), optimizer, std::move(data), seed),
      scaler_(scaler),
      precision_(precision) {
  if (opt_level == solver::OptLevel::O2)
    masters_ = std::make_unique<solver::MasterWeights>(
        optimizer, layers::normalization_parameters(this->model()), precision);
}

std::map<std::string, c10::IValue> AMPTrainer::extra_state() const {
  std::map<std::string, c10::IValue> state = {
      {"grad_scaler", solver::grad_scaler_state_to_ivalue(scaler_.state_dict())}};
  if (masters_) {
    c10::Dict<std::string, at::Tensor> weights;
    for (const auto& [name, master] : masters_->masters_by_name()) weights.insert(name, master);
    state["model"] = weights;
  }
  return state;
}

std::vector<at::Tensor> AMPTrainer::trained_parameters() const {
  return masters_ ? masters_->model_parameters() : Trainer::trained_parameters();
}

structures::LossDict AMPTrainer::forward(const std::vector<structures::ModelInput>& batch) {
  structures::LossDict losses;
  {
    const AutocastGuard autocast(true, precision_, model().device().type());
    losses = Trainer::forward(batch);
  }
  // Summed, logged and checked in fp32 whatever precision a term was computed in.
  for (auto& [name, loss] : losses) loss = loss.to(at::kFloat);
  return losses;
}

void AMPTrainer::backward(const at::Tensor& total) {
  storage().put_scalar("[metric]grad_scaler", scaler_.scale());
  Trainer::backward(scaler_.scale_loss(total));
}

void AMPTrainer::optimizer_step() {
  // Runs after synchronize_gradients: every rank holds the same averaged gradients.
  if (masters_) masters_->gradients_to_masters();
  const bool found_inf = scaler_.unscale_(optimizer().parameters());
  if (found_inf) {
    count_skipped_step();
  } else {
    Trainer::optimizer_step();
    if (masters_) masters_->masters_to_model();
  }
  scaler_.update(found_inf);
  // The masters' fp32 gradients are spent: not held through the next forward pass.
  if (masters_) optimizer().zero_grad(/*set_to_none=*/true);
  storage().put_scalar("amp/skipped_steps", static_cast<double>(skipped_steps()),
                       /*smoothing_hint=*/false);
}

std::unique_ptr<Trainer> build_trainer(const solver::AmpOptions& amp, solver::GradScaler* scaler,
                                       std::shared_ptr<modeling::MetaArch> model,
                                       solver::Optimizer& optimizer, BatchSource data,
                                       uint64_t seed) {
  if (!amp.enabled)
    return std::make_unique<Trainer>(std::move(model), optimizer, std::move(data), seed);
  if (!scaler) throw Error("mixed-precision training needs a loss scaler");
  return std::make_unique<AMPTrainer>(std::move(model), optimizer, std::move(data), seed, *scaler,
                                      amp.precision, amp.opt_level);
}

}  // namespace detkit::engine
