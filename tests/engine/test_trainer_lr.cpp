// The learning rate every parameter group applies, step after step, when the Trainer runs with
// the LR scheduler hook — not the schedule's values on paper. With momentum and weight decay 0,
// SGD moves each parameter by exactly -lr * grad, so each step's update is checked bit for bit
// against the closed-form schedule (warm-up linear and constant, multi-step decay, cosine, a bias
// group with its own LR factor), and a run resumed from saved state applies the same LRs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "detkit/data/loader.h"
#include "detkit/engine/hooks.h"
#include "detkit/engine/trainer.h"
#include "detkit/solver/build.h"
#include "detkit/solver/state_ivalue.h"
#include "tests/support/tiny_shapes.h"

namespace detkit::engine {
namespace {

constexpr double kBaseLr = 0.02, kWarmupFactor = 0.001, kBiasFactor = 2.0;
constexpr int64_t kWarmup = 4, kMaxIter = 10;

// Per step: each group's lr as the step applied it, and whether every parameter of the group
// moved by exactly -lr * grad.
struct Applied {
  std::vector<std::vector<double>> lrs;
  bool every_update_exact = true;
  int64_t parameters_checked = 0;
};

// Registered before the LR scheduler hook: after_step sees the lr the step used.
class AppliedLrProbe : public HookBase {
 public:
  explicit AppliedLrProbe(Applied& out) : out_(out) {}
  void before_step(Trainer& t) override {
    before_.clear();
    for (const auto& p : t.optimizer().parameters()) before_.push_back(p.detach().clone());
  }
  void after_step(Trainer& t) override {
    std::vector<double> lrs;
    size_t i = 0;
    for (size_t g = 0; g < t.optimizer().num_groups(); ++g) {
      const solver::OptimizerGroup& group = t.optimizer().group(g);
      lrs.push_back(group.lr);
      for (const auto& p : group.params) {
        const at::Tensor& before = before_[i++];
        if (!p.grad().defined()) continue;
        ++out_.parameters_checked;
        if (!p.detach().equal(before.add(p.grad(), -group.lr))) out_.every_update_exact = false;
      }
    }
    out_.lrs.push_back(std::move(lrs));
  }

 private:
  Applied& out_;
  std::vector<at::Tensor> before_;
};

struct TrainingRun {
  std::shared_ptr<modeling::MetaArch> model;
  std::unique_ptr<solver::SGD> optimizer;
  std::unique_ptr<solver::LRMultiplier> scheduler;
};

TrainingRun build_run(const config::CfgNode& cfg) {
  torch::manual_seed(0);
  TrainingRun r;
  r.model = modeling::build_model(cfg);
  r.optimizer = solver::build_optimizer(cfg, *r.model);
  r.scheduler = solver::build_lr_scheduler(cfg, *r.optimizer);
  return r;
}

// Trains iterations first .. last-1 on the same batch; returns what each step applied.
Applied train(TrainingRun& r, const std::vector<structures::ModelInput>& batch, int64_t first,
              int64_t last) {
  Applied applied;
  Trainer trainer(
      r.model, *r.optimizer, [&batch] { return batch; }, /*seed=*/5);
  trainer.register_hook(std::make_shared<AppliedLrProbe>(applied));
  trainer.register_hook(std::make_shared<LRSchedulerHook>(*r.scheduler));
  trainer.train(first, last);
  return applied;
}

struct Case {
  std::string name;
  std::vector<std::string> overrides;
  std::function<double(int64_t)> multiplier;  // the schedule's factor at iteration k
};

double multi_step(int64_t k) { return std::pow(0.1, (k >= 6) + (k >= 8)); }  // STEPS (6, 8)
double cosine(int64_t k) {
  const double end = 0.001 / kBaseLr;
  return end + 0.5 * (1 - end) * (1 + std::cos(M_PI * double(k) / kMaxIter));
}
std::function<double(int64_t)> linear_warmup(std::function<double(int64_t)> main) {
  return [main](int64_t k) {
    if (k >= kWarmup) return main(k);
    const double alpha = double(k) / kWarmup;
    return kWarmupFactor * main(0) * (1 - alpha) + main(kWarmup) * alpha;
  };
}
std::function<double(int64_t)> constant_warmup(std::function<double(int64_t)> main) {
  return [main](int64_t k) { return k >= kWarmup ? main(k) : kWarmupFactor * main(0); };
}

std::vector<Case> cases() {
  return {
      {"linear warm-up, multi-step", {}, linear_warmup(multi_step)},
      {"constant warm-up, multi-step",
       {"SOLVER.WARMUP_METHOD", "constant"},
       constant_warmup(multi_step)},
      {"no warm-up, constant",
       {"SOLVER.WARMUP_ITERS", "0", "SOLVER.STEPS", "()"},
       [](int64_t) { return 1.0; }},
      {"linear warm-up, cosine",
       {"SOLVER.LR_SCHEDULER_NAME", "WarmupCosineLR", "SOLVER.BASE_LR_END", "0.001"},
       linear_warmup(cosine)},
  };
}

config::CfgNode case_config(config::CfgNode cfg, const Case& c) {
  cfg.merge_from_list({"SOLVER.BASE_LR", std::to_string(kBaseLr), "SOLVER.MOMENTUM", "0",
                       "SOLVER.WEIGHT_DECAY", "0", "SOLVER.WEIGHT_DECAY_NORM", "0",
                       "SOLVER.BIAS_LR_FACTOR", std::to_string(kBiasFactor), "SOLVER.WARMUP_FACTOR",
                       std::to_string(kWarmupFactor), "SOLVER.WARMUP_ITERS",
                       std::to_string(kWarmup), "SOLVER.STEPS", "(6, 8)", "SOLVER.MAX_ITER",
                       std::to_string(kMaxIter)});
  cfg.merge_from_list(c.overrides);
  return cfg;
}

std::vector<structures::ModelInput> one_batch(const config::CfgNode& cfg) {
  return data::build_detection_train_loader(cfg, /*rank=*/0, /*world_size=*/1, /*seed=*/1)
      ->next_batch();
}

TEST(TrainerLr, EveryGroupAppliesTheScheduleAtEveryStep) {
  testing::TinySetup s("trainer_lr");
  const config::CfgNode tiny = testing::tiny_config(s, "trainer_lr");
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const config::CfgNode cfg = case_config(tiny, c);
    TrainingRun run = build_run(cfg);
    // Biases at BIAS_LR_FACTOR x BASE_LR, everything else at BASE_LR.
    auto is_bias = [](const std::string& n) {
      return n.size() > 5 && n.compare(n.size() - 5, 5, ".bias") == 0;
    };
    std::vector<double> group_base;
    for (const auto& g : run.optimizer->param_groups()) {
      const bool biases = is_bias(g.names.front());
      for (const auto& n : g.names) ASSERT_EQ(is_bias(n), biases) << n;
      group_base.push_back(biases ? kBiasFactor * kBaseLr : kBaseLr);
    }
    ASSERT_GT(std::count(group_base.begin(), group_base.end(), kBaseLr), 0);
    ASSERT_GT(std::count(group_base.begin(), group_base.end(), kBiasFactor * kBaseLr), 0);
    const Applied applied = train(run, one_batch(cfg), 0, kMaxIter);
    ASSERT_EQ(applied.lrs.size(), static_cast<size_t>(kMaxIter));
    for (int64_t k = 0; k < kMaxIter; ++k) {
      for (size_t g = 0; g < group_base.size(); ++g) {
        const double want = group_base[g] * c.multiplier(k);
        EXPECT_NEAR(applied.lrs[k][g], want, 1e-12 * want) << "iteration " << k << " group " << g;
      }
    }
    EXPECT_TRUE(applied.every_update_exact);
    EXPECT_GT(applied.parameters_checked, 10 * kMaxIter);
    std::cout << "[ trainer lr ] " << c.name << ": iteration 0, 1, " << kWarmup << ", "
              << kMaxIter - 1 << " applied " << applied.lrs[0][0] << ", " << applied.lrs[1][0]
              << ", " << applied.lrs[kWarmup][0] << ", " << applied.lrs[kMaxIter - 1][0] << "\n";
  }
}

TEST(TrainerLr, ResumedRunAppliesTheSameLrs) {
  testing::TinySetup s("trainer_lr_resume");
  const Case c = cases().front();
  const config::CfgNode cfg = case_config(testing::tiny_config(s, "trainer_lr_resume"), c);
  const auto batch = one_batch(cfg);
  TrainingRun straight = build_run(cfg);
  const Applied all = train(straight, batch, 0, kMaxIter);

  // Stop inside the warm-up, keep what a checkpoint keeps, resume in fresh objects.
  const int64_t stop = kWarmup - 1;
  TrainingRun first = build_run(cfg);
  train(first, batch, 0, stop);
  const auto weights = checkpoint::state_dict(*first.model);
  const c10::IValue optimizer_state = first.optimizer->state();
  const c10::IValue scheduler_state = solver::scheduler_state_to_ivalue(first.scheduler->state_dict());

  TrainingRun resumed = build_run(cfg);
  ASSERT_TRUE(checkpoint::load_state_dict(*resumed.model, weights).complete());
  resumed.optimizer->load_state(optimizer_state);
  resumed.scheduler->load_state_dict(solver::scheduler_state_from_ivalue(scheduler_state));
  const Applied rest = train(resumed, batch, stop, kMaxIter);

  ASSERT_EQ(rest.lrs.size(), static_cast<size_t>(kMaxIter - stop));
  for (int64_t k = stop; k < kMaxIter; ++k)
    EXPECT_EQ(rest.lrs[k - stop], all.lrs[k]) << "iteration " << k;
  EXPECT_TRUE(rest.every_update_exact);
  for (const auto& item : straight.model->named_parameters())
    EXPECT_TRUE(item.value().equal(resumed.model->named_parameters()[item.key()])) << item.key();
}

}  // namespace
}  // namespace detkit::engine
