// Mixed-precision training through the Trainer's phases: the forward pass under autocast with
// fp32 losses, an overflowing step skipped with weights and optimizer state untouched, the
// gradients unscaled before the optimizer clips them, the scale and skips recorded, and the
// scaler's state for checkpoints.
#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>

#include "detkit/config/defaults.h"
#include "detkit/data/loader.h"
#include "detkit/engine/amp_trainer.h"
#include "detkit/layers/norm.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/solver/build.h"
#include "detkit/solver/sgd.h"
#include "tests/support/tiny_shapes.h"

namespace detkit::engine {
namespace {

// One linear layer whose bias gets gradient `gradient` (times the loss scale in backward): a
// huge `gradient` overflows only once scaled, as a real fp16/bf16 overflow does.
class OverflowToy : public modeling::MetaArch {
 public:
  OverflowToy() : fc_(register_module("fc", torch::nn::Linear(2, 1))) {
    at::NoGradGuard no_grad;
    fc_->weight.fill_(0.25);
    fc_->bias.fill_(0.1);
  }
  double gradient = 1.0;
  c10::ScalarType seen = c10::kDouble;  // the dtype of fc's output in the last forward

  structures::LossDict losses(const std::vector<structures::ModelInput>&) override {
    const at::Tensor y = fc_->forward(at::ones({1, 2}));
    seen = y.scalar_type();
    // fc.weight's gradient is 0; fc.bias's is `gradient`.
    return {{"loss_toy", y.sum() * 0 + fc_->bias.sum() * gradient}};
  }
  std::vector<structures::Instances> inference(
      const std::vector<structures::ModelInput>&) override {
    return {};
  }
  float bias() const { return fc_->bias.item<float>(); }
  const at::Tensor& bias_tensor() const { return fc_->bias; }

 private:
  torch::nn::Linear fc_;
};

struct AmpSetup {
  std::shared_ptr<OverflowToy> model = std::make_shared<OverflowToy>();
  std::unique_ptr<solver::SGD> optimizer;
  solver::GradScaler scaler;
  AMPTrainer trainer;

  explicit AmpSetup(const std::vector<std::string>& overrides,
                    solver::OptLevel level = solver::OptLevel::O1)
      : optimizer(build(overrides, *model)),
        trainer(model, *optimizer, [] { return std::vector<structures::ModelInput>(1); }, 1,
                scaler, c10::kBFloat16, level) {}

  static std::unique_ptr<solver::SGD> build(const std::vector<std::string>& overrides,
                                            OverflowToy& model) {
    config::CfgNode cfg = config::get_cfg();
    cfg.merge_from_list({"SOLVER.BASE_LR", "1", "SOLVER.WEIGHT_DECAY", "0"});
    cfg.merge_from_list(overrides);
    return solver::build_optimizer(cfg, model);
  }
};

TEST(AMPTrainer, ForwardRunsUnderAutocastAndTheLossesComeBackFp32) {
  AmpSetup s({"SOLVER.MOMENTUM", "0"});
  s.trainer.train(0, 1);
  EXPECT_EQ(s.model->seen, c10::kBFloat16);  // the Linear ran in bfloat16
  EXPECT_FLOAT_EQ(s.model->bias(), 0.1f - 1.0f);  // unscaled gradient 1, lr 1
  EXPECT_EQ(s.trainer.storage().latest("[metric]grad_scaler").first, 65536.0);
  EXPECT_EQ(s.trainer.storage().latest("amp/skipped_steps").first, 0.0);
  EXPECT_EQ(s.scaler.growth_tracker(), 1);
}

TEST(AMPTrainer, AnOverflowSkipsExactlyThatStepAndTouchesNoWeightOrState) {
  AmpSetup s({"SOLVER.MOMENTUM", "0.9"});
  s.trainer.train(0, 1);  // a normal step: momentum buffers exist
  const float bias = s.model->bias();
  std::vector<at::Tensor> momentum;
  for (const auto& group : s.optimizer->param_groups())
    for (const at::Tensor& buffer : group.momentum_buffers) momentum.push_back(buffer.clone());
  ASSERT_EQ(momentum.size(), 2u);

  s.model->gradient = 1e34;  // finite loss; x 65536 in backward is past float's range
  s.trainer.train(1, 2);
  EXPECT_EQ(s.trainer.skipped_steps(), 1);
  EXPECT_EQ(s.trainer.storage().latest("amp/skipped_steps").first, 1.0);
  EXPECT_EQ(s.model->bias(), bias);
  size_t k = 0;
  for (const auto& group : s.optimizer->param_groups())
    for (const at::Tensor& buffer : group.momentum_buffers)
      EXPECT_TRUE(buffer.equal(momentum[k++])) << "momentum buffer " << k - 1;
  EXPECT_EQ(s.scaler.scale(), 32768.0);
  EXPECT_EQ(s.scaler.growth_tracker(), 0);

  s.model->gradient = 1.0;  // training goes on at the lower scale
  s.trainer.train(2, 3);
  EXPECT_EQ(s.trainer.skipped_steps(), 0);
  EXPECT_NE(s.model->bias(), bias);
  EXPECT_EQ(s.trainer.storage().latest("[metric]grad_scaler").first, 32768.0);
  EXPECT_EQ(s.scaler.growth_tracker(), 1);
}

TEST(AMPTrainer, TheClipperSeesUnscaledGradients) {
  // Clipping by value at 1: a true gradient of 0.5 passes whole (scaled by 65536 it would be
  // clipped to 1), one of 3 is clipped to 1.
  AmpSetup s({"SOLVER.MOMENTUM", "0", "SOLVER.CLIP_GRADIENTS.ENABLED", "True",
           "SOLVER.CLIP_GRADIENTS.CLIP_TYPE", "value", "SOLVER.CLIP_GRADIENTS.CLIP_VALUE", "1.0"});
  s.model->gradient = 0.5;
  s.trainer.train(0, 1);
  EXPECT_FLOAT_EQ(s.model->bias(), 0.1f - 0.5f);
  s.model->gradient = 3;
  s.trainer.train(1, 2);
  EXPECT_FLOAT_EQ(s.model->bias(), 0.1f - 0.5f - 1.0f);
}

TEST(AMPTrainer, ANonFiniteLossStopsTrainingInsteadOfSkipping) {
  AmpSetup s({"SOLVER.MOMENTUM", "0"});
  s.model->gradient = std::numeric_limits<double>::infinity();
  try {
    s.trainer.train(0, 1);
    FAIL() << "an infinite loss did not stop training";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("loss became infinite or NaN"), std::string::npos)
        << e.what();
  }
  EXPECT_FLOAT_EQ(s.model->bias(), 0.1f);
}

TEST(AMPTrainer, ItsCheckpointStateIsTheScalersInPyTorchsLayout) {
  AmpSetup s({"SOLVER.MOMENTUM", "0"});
  s.trainer.train(0, 2);
  const auto state = s.trainer.extra_state();
  ASSERT_EQ(state.count("grad_scaler"), 1u);
  const auto d = state.at("grad_scaler").toGenericDict();
  EXPECT_EQ(d.at(std::string("scale")).toDouble(), 65536.0);
  EXPECT_EQ(d.at(std::string("_growth_tracker")).toInt(), 2);
  EXPECT_TRUE(Trainer(s.model, *s.optimizer, {}, 1).extra_state().empty());
}

// O2: the model's weights in bfloat16, the optimizer's fp32 masters; a step updates the master
// exactly (0.1f - 1) and rounds it into the model; checkpoints hold the masters.
TEST(AMPTrainer, O2StepsFp32MastersAndKeepsTheModelInBfloat16) {
  AmpSetup s({"SOLVER.MOMENTUM", "0"}, solver::OptLevel::O2);
  ASSERT_NE(s.trainer.master_weights(), nullptr);
  EXPECT_EQ(s.model->bias_tensor().scalar_type(), at::kBFloat16);
  EXPECT_TRUE(s.trainer.trained_parameters()[1].is_same(s.model->bias_tensor()));
  s.trainer.train(0, 1);
  EXPECT_EQ(s.model->seen, c10::kBFloat16);
  const at::Tensor master = s.trainer.master_weights()->masters_by_name().at("fc.bias");
  EXPECT_EQ(master.scalar_type(), at::kFloat);
  EXPECT_EQ(master.item<float>(), 0.1f - 1.0f);
  EXPECT_EQ(s.model->bias(), at::full({1}, 0.1f - 1.0f).to(at::kBFloat16).item<float>());
  EXPECT_NE(s.model->bias(), master.item<float>());  // bf16's rounding: why masters are kept
  // The spent gradients are dropped: neither the model nor the masters hold any.
  EXPECT_FALSE(s.model->bias_tensor().grad().defined());
  EXPECT_FALSE(master.grad().defined());
  const auto state = s.trainer.extra_state();
  ASSERT_EQ(state.count("model"), 1u);
  const auto weights = state.at("model").toGenericDict();
  EXPECT_EQ(weights.size(), 2u);
  EXPECT_TRUE(weights.at(std::string("fc.bias")).toTensor().equal(master));
}

TEST(AMPTrainer, O2OverflowTouchesNeitherMastersNorModel) {
  AmpSetup s({"SOLVER.MOMENTUM", "0.9"}, solver::OptLevel::O2);
  s.trainer.train(0, 1);
  const at::Tensor master = s.trainer.master_weights()->masters_by_name().at("fc.bias").clone();
  const at::Tensor model = s.model->bias_tensor().clone();
  s.model->gradient = 1e34;  // finite in bf16 too; x 65536 in backward is past its range
  s.trainer.train(1, 2);
  EXPECT_EQ(s.trainer.skipped_steps(), 1);
  EXPECT_TRUE(s.trainer.master_weights()->masters_by_name().at("fc.bias").equal(master));
  EXPECT_TRUE(s.model->bias_tensor().equal(model));
  EXPECT_EQ(s.scaler.scale(), 32768.0);
}

// The tiny Mask R-CNN with each NORM trains two steps at O1 and at O2 with finite losses; at O2
// every trained weight is bfloat16 but the normalisation layers' (fp32).
TEST(AMPTrainer, EveryNormTrainsAtO1AndO2) {
  testing::TinySetup setup("amp_norms");
  const config::CfgNode tiny = testing::tiny_config(setup, "amp_norms");  // registers it once
  for (const std::string norm : {"GN", "BN", "SyncBN", "FrozenBN", ""}) {
    for (const auto level : {solver::OptLevel::O1, solver::OptLevel::O2}) {
      const std::string what = "NORM '" + norm + (level == solver::OptLevel::O2 ? "' O2" : "' O1");
      config::CfgNode cfg = tiny;
      cfg.merge_from_list({"MODEL.RESNETS.NORM", norm, "MODEL.FPN.NORM", norm});
      auto model = modeling::build_model(cfg);
      auto optimizer = solver::build_optimizer(cfg, *model);
      auto loader = data::build_detection_train_loader(cfg, 0, 1, 1);
      solver::GradScaler scaler;
      AMPTrainer trainer(model, *optimizer, [&] { return loader->next_batch(); }, 1, scaler,
                         c10::kBFloat16, level);
      trainer.train(0, 2);
      EXPECT_TRUE(std::isfinite(trainer.storage().latest("total_loss").first)) << what;
      const auto keep = layers::normalization_parameters(*model);
      size_t reduced = 0;
      for (const auto& p : model->named_parameters()) {
        const bool is_norm = keep.count(p.value().unsafeGetTensorImpl()) > 0;
        const auto want = level == solver::OptLevel::O2 && !is_norm && p.value().requires_grad()
                              ? at::kBFloat16
                              : at::kFloat;
        EXPECT_EQ(p.value().scalar_type(), want) << what << " " << p.key();
        reduced += want == at::kBFloat16;
      }
      if (level == solver::OptLevel::O2) EXPECT_GT(reduced, 20u) << what;
    }
  }
}

TEST(AMPTrainer, BuildTrainerFollowsSolverAmpEnabled) {
  auto model = std::make_shared<OverflowToy>();
  auto optimizer = AmpSetup::build({}, *model);
  solver::GradScaler scaler;
  solver::AmpOptions amp;
  EXPECT_EQ(dynamic_cast<AMPTrainer*>(
                build_trainer(amp, &scaler, model, *optimizer, {}, 1).get()),
            nullptr);
  amp.enabled = true;
  EXPECT_NE(dynamic_cast<AMPTrainer*>(
                build_trainer(amp, &scaler, model, *optimizer, {}, 1).get()),
            nullptr);
}

}  // namespace
}  // namespace detkit::engine
