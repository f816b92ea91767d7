// SGD against hand-computed steps, and exact resume from saved optimizer + scheduler state.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/config/defaults.h"
#include "detkit/solver/build.h"
#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

// Two steps on p = [1, -2] with gradients [0.5, 0.25] then [-1, 0.5]; lr 0.1, momentum 0.9,
// weight decay 0.01. Returns p after each step.
std::vector<at::Tensor> two_steps(bool nesterov, double dampening) {
  auto p = torch::tensor({1.0, -2.0}, torch::kDouble).requires_grad_(true);
  SGD sgd({ParamGroup{{p}, {"p"}, std::nullopt, std::nullopt}},
          SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(nesterov).dampening(dampening));
  std::vector<at::Tensor> out;
  for (const auto& g :
       {torch::tensor({0.5, 0.25}, torch::kDouble), torch::tensor({-1.0, 0.5}, torch::kDouble)}) {
    p.mutable_grad() = g;
    sgd.step();
    out.push_back(p.detach().clone());
  }
  return out;
}

void expect_values(const at::Tensor& t, std::vector<double> want) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(t[i].item<double>(), want[i], 1e-12) << i;
}

TEST(SGD, MomentumAndWeightDecayByHand) {
  // step 1: d = g + 0.01 p = [0.51, 0.23]; b = d; p -= 0.1 b
  // step 2: d = [-1 + 0.00949, 0.5 - 0.02023]; b = 0.9 [0.51, 0.23] + d = [-0.53151, 0.68677]
  const auto p = two_steps(/*nesterov=*/false, /*dampening=*/0);
  expect_values(p[0], {0.949, -2.023});
  expect_values(p[1], {1.002151, -2.091677});
}

TEST(SGD, NesterovByHand) {
  // step 1: d = [0.51, 0.23]; b = d; d + 0.9 b = [0.969, 0.437]
  // step 2: d = [-0.990969, 0.479563]; b = [-0.531969, 0.686563]; d + 0.9 b
  //         = [-1.4697411, 1.0974697]
  const auto p = two_steps(/*nesterov=*/true, /*dampening=*/0);
  expect_values(p[0], {0.9031, -2.0437});
  expect_values(p[1], {1.05007411, -2.15344697});
}

TEST(SGD, DampeningSkipsTheFirstStep) {
  // step 2: b = 0.9 [0.51, 0.23] + 0.5 [-0.99051, 0.47977] = [-0.036255, 0.446885]
  const auto p = two_steps(/*nesterov=*/false, /*dampening=*/0.5);
  expect_values(p[0], {0.949, -2.023});
  expect_values(p[1], {0.9526255, -2.0676885});
}

TEST(SGD, SkipsParametersWithoutGradientAndZeroGradKeepsThem) {
  auto a = torch::ones({2}, torch::requires_grad());
  auto b = torch::ones({2}, torch::requires_grad());
  SGD sgd({ParamGroup{{a, b}, {"a", "b"}, std::nullopt, std::nullopt}},
          SGDOptions(0.5).momentum(0.9).weight_decay(0.1));
  a.mutable_grad() = torch::ones({2});
  sgd.step();
  EXPECT_TRUE(torch::equal(b, torch::ones({2})));
  EXPECT_TRUE(torch::allclose(a, torch::full({2}, 1 - 0.5 * 1.1), 0, 1e-6));
  EXPECT_EQ(sgd.state_dict().momentum_buffers.size(), 1u);
  sgd.zero_grad();
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().abs().sum().item<float>(), 0.0f);
  EXPECT_FALSE(b.grad().defined());
  sgd.zero_grad(/*set_to_none=*/true);
  EXPECT_FALSE(a.grad().defined());
}

TEST(SGD, RejectsBadOptions) {
  auto p = torch::ones({1}, torch::requires_grad());
  auto group = [&] { return std::vector<ParamGroup>{{{p}, {"p"}, {}, {}}}; };
  EXPECT_THROW(SGD(group(), SGDOptions(-0.1)), Error);
  EXPECT_THROW(SGD(group(), SGDOptions(0.1).momentum(-1)), Error);
  EXPECT_THROW(SGD(group(), SGDOptions(0.1).weight_decay(-1)), Error);
  EXPECT_THROW(SGD(group(), SGDOptions(0.1).nesterov(true)), Error);
  EXPECT_THROW(SGD(group(), SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)), Error);
}

// A small model: two parameter groups (weights, norm), as build_optimizer makes them.
struct Tiny : torch::nn::Module {
  Tiny() {
    fc = register_module("fc", torch::nn::Linear(4, 3));
    norm = register_module("norm", torch::nn::BatchNorm1d(3));
  }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
};

config::CfgNode resume_cfg() {
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.BASE_LR", 0.05);
  cfg.set("SOLVER.MAX_ITER", 10);
  cfg.set("SOLVER.STEPS", config::CfgValue::list({5}));
  cfg.set("SOLVER.WARMUP_ITERS", 3);
  cfg.set("SOLVER.NESTEROV", true);
  return cfg;
}

// Steps `count` times from `first` with seeded gradients.
void run(Tiny& model, SGD& sgd, LRMultiplier& sched, int first, int count) {
  for (int it = first; it < first + count; ++it) {
    torch::manual_seed(100 + it);
    for (auto& p : model.parameters()) p.mutable_grad() = torch::randn_like(p);
    sgd.step();
    sched.step();
  }
}

TEST(SGD, SavedStateResumesExactly) {
  const auto cfg = resume_cfg();
  torch::manual_seed(0);
  Tiny straight;
  auto sgd = build_optimizer(cfg, straight);
  auto sched = build_lr_scheduler(cfg, *sgd);
  ASSERT_EQ(sgd->param_groups().size(), 2u);
  run(straight, *sgd, *sched, 0, 4);

  // Save: weights, optimizer state through its flat named form, scheduler state.
  const auto weights = straight.named_parameters();
  std::map<std::string, at::Tensor> saved_weights;
  for (const auto& item : weights) saved_weights[item.key()] = item.value().detach().clone();
  const NamedSGDState saved_optimizer = to_named(sgd->state_dict());
  const LRSchedulerState saved_scheduler = sched->state_dict();
  EXPECT_EQ(saved_optimizer.tensors.count("state.0.momentum_buffer"), 1u);
  EXPECT_EQ(saved_optimizer.numbers.at("param_groups.1.weight_decay"), 0.0);
  EXPECT_EQ(saved_optimizer.numbers.at("param_groups.0.initial_lr"), 0.05);
  EXPECT_EQ(saved_scheduler.last_epoch, 4);

  run(straight, *sgd, *sched, 4, 4);

  torch::manual_seed(1);  // different initial weights: all must come from the saved state
  Tiny resumed;
  {
    torch::NoGradGuard no_grad;
    for (auto& item : resumed.named_parameters()) item.value().copy_(saved_weights[item.key()]);
  }
  auto sgd2 = build_optimizer(cfg, resumed);
  auto sched2 = build_lr_scheduler(cfg, *sgd2);
  sgd2->load_state_dict(from_named(saved_optimizer));
  sched2->load_state_dict(saved_scheduler);
  EXPECT_EQ(sgd2->param_groups()[0].lr, saved_optimizer.numbers.at("param_groups.0.lr"));
  run(resumed, *sgd2, *sched2, 4, 4);

  for (const auto& item : straight.named_parameters()) {
    EXPECT_TRUE(torch::equal(item.value(), resumed.named_parameters()[item.key()])) << item.key();
  }
  EXPECT_EQ(sgd2->param_groups()[0].lr, sgd->param_groups()[0].lr);
  EXPECT_EQ(sched2->last_epoch(), 8);
}

TEST(SGD, LoadStateRejectsMismatches) {
  Tiny model;
  auto sgd = build_optimizer(resume_cfg(), model);
  SGDState state = sgd->state_dict();
  state.momentum_buffers[0] = torch::zeros({7});
  EXPECT_THROW(sgd->load_state_dict(state), Error);
  state = sgd->state_dict();
  state.param_groups.pop_back();
  EXPECT_THROW(sgd->load_state_dict(state), Error);
  NamedSGDState named = to_named(sgd->state_dict());
  named.tensors["state.x.momentum_buffer"] = torch::zeros({1});
  EXPECT_THROW(from_named(named), Error);
  named = to_named(sgd->state_dict());
  named.tensors["other.0.momentum_buffer"] = torch::zeros({1});
  EXPECT_THROW(from_named(named), Error);
  named = to_named(sgd->state_dict());
  named.numbers.erase("param_groups.0.lr");
  EXPECT_THROW(from_named(named), Error);
  EXPECT_EQ(sgd->param_names(),
            (std::vector<std::string>{"fc.weight", "fc.bias", "norm.weight", "norm.bias"}));
}

}  // namespace
}  // namespace detkit::solver
