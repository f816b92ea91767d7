// Config readers: bad names, and auto-scaling to another world size.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/config/defaults.h"
#include "detkit/solver/auto_scale.h"
#include "detkit/solver/build.h"
#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

using config::CfgValue;

std::string build_error(const config::CfgNode& cfg) {
  try {
    build_lr_multiplier(cfg);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(BuildLRScheduler, UnknownSchedulerNameListsValidOnes) {
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.LR_SCHEDULER_NAME", "WarmupPolyLR");
  const std::string message = build_error(cfg);
  for (const char* part : {"SOLVER.LR_SCHEDULER_NAME", "'WarmupPolyLR'", "WarmupMultiStepLR",
                           "WarmupCosineLR", "WarmupStepWithFixedGammaLR"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
}

TEST(BuildLRScheduler, UnknownWarmupMethodListsValidOnes) {
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.WARMUP_METHOD", "exponential");
  const std::string message = build_error(cfg);
  for (const char* part : {"SOLVER.WARMUP_METHOD", "'exponential'", "'linear'", "'constant'"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in: " << message;
  }
}

TEST(BuildLRScheduler, BadNumbersAreErrors) {
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.LR_SCHEDULER_NAME", "WarmupCosineLR");
  cfg.set("SOLVER.BASE_LR_END", 0.01);  // above BASE_LR 0.001
  EXPECT_NE(build_error(cfg).find("SOLVER.BASE_LR_END"), std::string::npos);
  cfg = config::get_cfg();
  cfg.set("SOLVER.STEPS", CfgValue::list({300, 200}));
  EXPECT_NE(build_error(cfg).find("SOLVER.STEPS"), std::string::npos);
  cfg = config::get_cfg();
  cfg.set("SOLVER.LR_SCHEDULER_NAME", "WarmupStepWithFixedGammaLR");
  cfg.set("SOLVER.NUM_DECAYS", 0);
  EXPECT_NE(build_error(cfg).find("SOLVER.NUM_DECAYS"), std::string::npos);
  cfg = config::get_cfg();
  cfg.set("SOLVER.RESCALE_INTERVAL", true);
  cfg.set("SOLVER.WARMUP_ITERS", 50000);
  EXPECT_NE(build_error(cfg).find("SOLVER.RESCALE_INTERVAL"), std::string::npos);
}

TEST(AutoScaleWorkers, ScalesAsDetectron2) {
  // Detectron2's docstring example: 8 reference GPUs, run on 16.
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.IMS_PER_BATCH", 16);
  cfg.set("SOLVER.BASE_LR", 0.1);
  cfg.set("SOLVER.REFERENCE_WORLD_SIZE", 8);
  cfg.set("SOLVER.MAX_ITER", 5000);
  cfg.set("SOLVER.STEPS", CfgValue::list({4000}));
  cfg.set("SOLVER.CHECKPOINT_PERIOD", 1000);
  cfg.set("SOLVER.WARMUP_ITERS", 1000);
  cfg.set("TEST.EVAL_PERIOD", 500);
  const auto out = auto_scale_workers(cfg, 16);
  EXPECT_EQ(out.get_int("SOLVER.IMS_PER_BATCH"), 32);
  EXPECT_EQ(out.get_float("SOLVER.BASE_LR"), 0.2);
  EXPECT_EQ(out.get_int("SOLVER.MAX_ITER"), 2500);
  EXPECT_EQ(out.get_int_list("SOLVER.STEPS"), (std::vector<int64_t>{2000}));
  EXPECT_EQ(out.get_int("SOLVER.CHECKPOINT_PERIOD"), 500);
  EXPECT_EQ(out.get_int("SOLVER.WARMUP_ITERS"), 500);
  EXPECT_EQ(out.get_int("TEST.EVAL_PERIOD"), 250);
  EXPECT_EQ(out.get_int("SOLVER.REFERENCE_WORLD_SIZE"), 16);
  EXPECT_EQ(cfg.get_int("SOLVER.IMS_PER_BATCH"), 16);  // the input is left alone
}

TEST(AutoScaleWorkers, RoundsHalfToEvenAndChecksDivisibility) {
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.IMS_PER_BATCH", 16);
  cfg.set("SOLVER.REFERENCE_WORLD_SIZE", 8);
  cfg.set("SOLVER.MAX_ITER", 5);      // 5 / 0.5: 10
  cfg.set("SOLVER.WARMUP_ITERS", 1);  // 1 / 0.5: 2
  cfg.set("SOLVER.STEPS", CfgValue::list({3}));
  const auto out = auto_scale_workers(cfg, 4);
  EXPECT_EQ(out.get_int("SOLVER.IMS_PER_BATCH"), 8);
  EXPECT_EQ(out.get_int("SOLVER.MAX_ITER"), 10);
  const auto quarter = auto_scale_workers(cfg, 32);  // scale 4: 5/4 = 1.25 -> 1, 3/4 -> 1
  EXPECT_EQ(quarter.get_int("SOLVER.MAX_ITER"), 1);
  const auto half = auto_scale_workers(cfg, 16);  // scale 2: 5/2 = 2.5 -> 2, 1/2 -> 0, 3/2 -> 2
  EXPECT_EQ(half.get_int("SOLVER.MAX_ITER"), 2);
  EXPECT_EQ(half.get_int("SOLVER.WARMUP_ITERS"), 0);
  EXPECT_EQ(half.get_int_list("SOLVER.STEPS"), (std::vector<int64_t>{2}));

  EXPECT_EQ(auto_scale_workers(cfg, 8), cfg);  // same world size: unchanged
  cfg.set("SOLVER.REFERENCE_WORLD_SIZE", 0);
  EXPECT_EQ(auto_scale_workers(cfg, 3), cfg);  // disabled
  cfg.set("SOLVER.REFERENCE_WORLD_SIZE", 3);
  EXPECT_THROW(auto_scale_workers(cfg, 6), Error);  // 16 images over 3 workers
  cfg.set("SOLVER.REFERENCE_WORLD_SIZE", 8);
  cfg.freeze();  // as Detectron2's: a frozen config is scaled into a frozen copy
  const auto frozen = auto_scale_workers(cfg, 16);
  EXPECT_TRUE(frozen.is_frozen());
  EXPECT_EQ(frozen.get_int("SOLVER.IMS_PER_BATCH"), 32);
}

}  // namespace
}  // namespace detkit::solver
