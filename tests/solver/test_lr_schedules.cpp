// Each LR schedule against values worked out by hand from Detectron2's definitions.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "detkit/config/defaults.h"
#include "detkit/solver/build.h"
#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

using config::CfgNode;
using config::CfgValue;

// lr of a one-group optimizer after stepping the schedule to each iteration 0..max_iter.
std::vector<double> schedule(const CfgNode& cfg) {
  auto p = torch::zeros({1}, torch::requires_grad());
  SGD sgd({ParamGroup{{p}, {"p"}, std::nullopt, std::nullopt}},
          SGDOptions(cfg.get_float("SOLVER.BASE_LR")));
  auto sched = build_lr_scheduler(cfg, sgd);
  std::vector<double> lrs{sgd.param_groups()[0].lr};
  for (int64_t i = 0; i < cfg.get_int("SOLVER.MAX_ITER"); ++i) {
    sched->step();
    lrs.push_back(sgd.param_groups()[0].lr);
  }
  return lrs;
}

CfgNode multistep_cfg() {
  CfgNode cfg = config::get_cfg();
  cfg.set("SOLVER.BASE_LR", 0.02);
  cfg.set("SOLVER.MAX_ITER", 100);
  cfg.set("SOLVER.STEPS", CfgValue::list({60, 80}));
  cfg.set("SOLVER.WARMUP_ITERS", 10);
  return cfg;  // GAMMA 0.1, WARMUP_FACTOR 0.001, linear
}

TEST(LRSchedule, WarmupMultiStepLinear) {
  const auto lr = schedule(multistep_cfg());
  ASSERT_EQ(lr.size(), 101u);
  EXPECT_NEAR(lr[0], 0.02 * 0.001, 1e-15);                // warm-up start
  EXPECT_NEAR(lr[5], 0.02 * (0.5 + 0.5 * 0.001), 1e-15);  // warm-up middle
  EXPECT_NEAR(lr[9], 0.02 * (0.9 + 0.1 * 0.001), 1e-15);  // last warm-up iteration
  EXPECT_NEAR(lr[10], 0.02, 1e-15);                       // warm-up end
  EXPECT_NEAR(lr[59], 0.02, 1e-15);
  EXPECT_NEAR(lr[60], 0.002, 1e-15);  // first step
  EXPECT_NEAR(lr[79], 0.002, 1e-15);
  EXPECT_NEAR(lr[80], 0.0002, 1e-15);  // second step
  EXPECT_NEAR(lr[100], 0.0002, 1e-15);
}

TEST(LRSchedule, WarmupMultiStepConstantWarmup) {
  CfgNode cfg = multistep_cfg();
  cfg.set("SOLVER.WARMUP_METHOD", "constant");
  const auto lr = schedule(cfg);
  EXPECT_NEAR(lr[0], 0.02 * 0.001, 1e-15);
  EXPECT_NEAR(lr[9], 0.02 * 0.001, 1e-15);
  EXPECT_NEAR(lr[10], 0.02, 1e-15);
  EXPECT_NEAR(lr[60], 0.002, 1e-15);
}

TEST(LRSchedule, StepsBeyondMaxIterAreDropped) {
  CfgNode cfg = multistep_cfg();
  cfg.set("SOLVER.STEPS", CfgValue::list({60, 80, 150}));
  EXPECT_EQ(schedule(cfg), schedule(multistep_cfg()));
  cfg.set("SOLVER.STEPS", CfgValue::list({60, 100}));  // == MAX_ITER: kept, then refused
  EXPECT_THROW(build_lr_multiplier(cfg), Error);
}

TEST(LRSchedule, NoWarmup) {
  CfgNode cfg = multistep_cfg();
  cfg.set("SOLVER.WARMUP_ITERS", 0);
  const auto lr = schedule(cfg);
  EXPECT_NEAR(lr[0], 0.02, 1e-15);
  EXPECT_NEAR(lr[60], 0.002, 1e-15);
}

TEST(LRSchedule, WarmupCosine) {
  CfgNode cfg = multistep_cfg();
  cfg.set("SOLVER.LR_SCHEDULER_NAME", "WarmupCosineLR");
  cfg.set("SOLVER.BASE_LR_END", 0.002);  // end multiplier 0.1
  const auto lr = schedule(cfg);
  const double at_warmup_end = 0.1 + 0.45 * (1 + std::cos(M_PI * 0.1));  // cosine at 10/100
  EXPECT_NEAR(lr[0], 0.02 * 0.001, 1e-15);
  EXPECT_NEAR(lr[5], 0.02 * (0.5 * at_warmup_end + 0.5 * 0.001), 1e-15);
  EXPECT_NEAR(lr[10], 0.02 * at_warmup_end, 1e-15);
  EXPECT_NEAR(lr[50], 0.02 * 0.55, 1e-15);  // midpoint: halfway between 1 and 0.1
  EXPECT_NEAR(lr[75], 0.02 * (0.1 + 0.45 * (1 - std::sqrt(0.5))), 1e-15);
  EXPECT_NEAR(lr[100], 0.002, 1e-15);  // BASE_LR_END
}

TEST(LRSchedule, WarmupStepWithFixedGammaRescaled) {
  // Detectron2's tests/test_scheduler.py test_warmup_stepwithfixedgamma.
  CfgNode cfg = config::get_cfg();
  cfg.set("SOLVER.LR_SCHEDULER_NAME", "WarmupStepWithFixedGammaLR");
  cfg.set("SOLVER.BASE_LR", 5.0);
  cfg.set("SOLVER.MAX_ITER", 30);
  cfg.set("SOLVER.NUM_DECAYS", 4);
  cfg.set("SOLVER.WARMUP_ITERS", 5);
  cfg.set("SOLVER.RESCALE_INTERVAL", true);
  const auto lr = schedule(cfg);
  const std::vector<double> warmup{0.005, 1.004, 2.003, 3.002, 4.001};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(lr[i], warmup[i], 1e-12) << i;
  const double stage[] = {5.0, 0.5, 0.05, 0.005, 0.0005};
  for (int i = 5; i < 30; ++i) EXPECT_NEAR(lr[i], stage[(i - 5) / 5], 1e-12) << i;
  EXPECT_NEAR(lr[30], 0.0005, 1e-12);  // the step after the last iteration
}

TEST(LRSchedule, WarmupStepWithFixedGammaFixedInterval) {
  CfgNode cfg = config::get_cfg();
  cfg.set("SOLVER.LR_SCHEDULER_NAME", "WarmupStepWithFixedGammaLR");
  cfg.set("SOLVER.BASE_LR", 5.0);
  cfg.set("SOLVER.MAX_ITER", 30);
  cfg.set("SOLVER.NUM_DECAYS", 4);
  cfg.set("SOLVER.WARMUP_ITERS", 5);
  const auto lr = schedule(cfg);  // 5 stages of 6 iterations over the whole run
  EXPECT_NEAR(lr[0], 0.005, 1e-12);
  EXPECT_NEAR(lr[5], 5.0, 1e-12);
  EXPECT_NEAR(lr[6], 0.5, 1e-12);
  EXPECT_NEAR(lr[11], 0.5, 1e-12);
  EXPECT_NEAR(lr[12], 0.05, 1e-12);
  EXPECT_NEAR(lr[24], 0.0005, 1e-12);
  EXPECT_NEAR(lr[29], 0.0005, 1e-12);
}

TEST(LRSchedule, BiasGroupKeepsItsRatio) {
  CfgNode cfg = multistep_cfg();
  auto a = torch::zeros({1}, torch::requires_grad());
  auto b = torch::zeros({1}, torch::requires_grad());
  SGD sgd({ParamGroup{{a}, {"a"}, 0.02, std::nullopt}, ParamGroup{{b}, {"b"}, 0.04, 0.0}},
          SGDOptions(0.02));
  auto sched = build_lr_scheduler(cfg, sgd);
  for (int i = 0; i < 60; ++i) sched->step();
  EXPECT_NEAR(sgd.param_groups()[0].lr, 0.002, 1e-15);
  EXPECT_NEAR(sgd.param_groups()[1].lr, 0.004, 1e-15);
  EXPECT_EQ(sched->base_lrs(), (std::vector<double>{0.02, 0.04}));
  EXPECT_EQ(sgd.param_groups()[1].initial_lr, 0.04);
}

TEST(LRSchedule, SchedulerStateRestoresIteration) {
  CfgNode cfg = multistep_cfg();
  auto p = torch::zeros({1}, torch::requires_grad());
  SGD sgd({ParamGroup{{p}, {"p"}, std::nullopt, std::nullopt}}, SGDOptions(0.02));
  auto sched = build_lr_scheduler(cfg, sgd);
  for (int i = 0; i < 59; ++i) sched->step();
  const LRSchedulerState saved = sched->state_dict();
  EXPECT_EQ(saved.last_epoch, 59);

  SGD fresh({ParamGroup{{p}, {"p"}, std::nullopt, std::nullopt}}, SGDOptions(0.02));
  auto resumed = build_lr_scheduler(cfg, fresh);
  EXPECT_NEAR(fresh.param_groups()[0].lr, 2e-5, 1e-15);
  resumed->load_state_dict(saved);
  EXPECT_EQ(resumed->last_epoch(), 59);
  EXPECT_NEAR(fresh.param_groups()[0].lr, 0.02, 1e-15);
  sched->step();
  resumed->step();
  EXPECT_EQ(fresh.param_groups()[0].lr, sgd.param_groups()[0].lr);
  EXPECT_NEAR(fresh.param_groups()[0].lr, 0.002, 1e-15);
  EXPECT_THROW(resumed->load_state_dict({{0.02, 0.02}, 3}), Error);
}

TEST(LRSchedule, SteppingPastMaxIterIsAnError) {
  // fvcore refuses progress beyond 1 for multi-step schedules.
  CfgNode cfg = multistep_cfg();
  auto p = torch::zeros({1}, torch::requires_grad());
  SGD sgd({ParamGroup{{p}, {"p"}, std::nullopt, std::nullopt}}, SGDOptions(0.02));
  auto sched = build_lr_scheduler(cfg, sgd);
  for (int i = 0; i < 100; ++i) sched->step();
  EXPECT_THROW(sched->step(), Error);
}

}  // namespace
}  // namespace detkit::solver
