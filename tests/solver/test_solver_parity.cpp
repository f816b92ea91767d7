// Parity with PyTorch's torch.optim.SGD and clip_grad_*_, and with Detectron2's LRMultiplier over
// fvcore schedulers (tests/parity/oracle_solver.py), on the same tensors and gradients.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <iostream>

#include "detkit/config/defaults.h"
#include "detkit/solver/build.h"
#include "tests/parity/oracle.h"

namespace detkit::solver {
namespace {

using config::CfgNode;
using config::CfgValue;
using testing::run_oracle;
using testing::TensorMap;

// The oracle's case row and steps row for a config (see oracle_solver.py).
std::pair<at::Tensor, at::Tensor> encode(const CfgNode& cfg) {
  const std::string name = cfg.get_string("SOLVER.LR_SCHEDULER_NAME");
  const double kind = name == "WarmupMultiStepLR" ? 0 : name == "WarmupCosineLR" ? 1 : 2;
  const std::vector<double> row{kind,
                                double(cfg.get_int("SOLVER.MAX_ITER")),
                                double(cfg.get_int("SOLVER.WARMUP_ITERS")),
                                cfg.get_float("SOLVER.WARMUP_FACTOR"),
                                cfg.get_string("SOLVER.WARMUP_METHOD") == "constant" ? 1.0 : 0.0,
                                cfg.get_bool("SOLVER.RESCALE_INTERVAL") ? 1.0 : 0.0,
                                cfg.get_float("SOLVER.GAMMA"),
                                cfg.get_float("SOLVER.BASE_LR"),
                                cfg.get_float("SOLVER.BASE_LR_END"),
                                double(cfg.get_int("SOLVER.NUM_DECAYS"))};
  std::vector<double> steps(4, -1.0);
  const auto cfg_steps = cfg.get_int_list("SOLVER.STEPS");
  for (size_t i = 0; i < cfg_steps.size() && i < steps.size(); ++i) steps[i] = cfg_steps[i];
  return {torch::tensor(row, torch::kDouble).unsqueeze(0),
          torch::tensor(steps, torch::kDouble).unsqueeze(0)};
}

std::vector<CfgNode> schedule_cases() {
  std::vector<CfgNode> cases;
  auto base = [] {
    CfgNode cfg = config::get_cfg();
    cfg.set("SOLVER.BASE_LR", 0.02);
    cfg.set("SOLVER.MAX_ITER", 90);
    cfg.set("SOLVER.WARMUP_ITERS", 7);
    cfg.set("SOLVER.STEPS", CfgValue::list({30, 61, 120}));
    return cfg;
  };
  cases.push_back(base());
  cases.push_back(base());
  cases.back().set("SOLVER.WARMUP_METHOD", "constant");
  cases.push_back(base());
  cases.back().set("SOLVER.LR_SCHEDULER_NAME", "WarmupCosineLR");
  cases.back().set("SOLVER.BASE_LR_END", 0.0005);
  cases.push_back(base());
  cases.back().set("SOLVER.LR_SCHEDULER_NAME", "WarmupCosineLR");
  cases.back().set("SOLVER.RESCALE_INTERVAL", true);
  for (bool rescale : {false, true}) {
    cases.push_back(base());
    cases.back().set("SOLVER.LR_SCHEDULER_NAME", "WarmupStepWithFixedGammaLR");
    cases.back().set("SOLVER.NUM_DECAYS", 4);
    cases.back().set("SOLVER.GAMMA", 0.3);
    cases.back().set("SOLVER.RESCALE_INTERVAL", rescale);
  }
  cases.push_back(base());
  cases.back().set("SOLVER.WARMUP_ITERS", 0);
  return cases;
}

TEST(SolverParity, LRSchedulesMatchDetectron2) {
  DETKIT_REQUIRE_ORACLE();
  const auto cases = schedule_cases();
  std::vector<at::Tensor> rows, steps;
  for (const auto& cfg : cases) {
    auto [row, step] = encode(cfg);
    rows.push_back(row);
    steps.push_back(step);
  }
  const TensorMap want = run_oracle("oracle_solver.py", "schedule",
                                    {{"cases", torch::cat(rows)}, {"steps", torch::cat(steps)}});
  const at::Tensor lrs = want.at("lrs");
  double max_diff = 0;
  int64_t compared = 0;
  for (size_t c = 0; c < cases.size(); ++c) {
    auto p = torch::zeros({1}, torch::requires_grad());
    SGD sgd({ParamGroup{{p}, {"p"}, std::nullopt, std::nullopt}},
            SGDOptions(cases[c].get_float("SOLVER.BASE_LR")));
    auto sched = build_lr_scheduler(cases[c], sgd);
    for (int64_t it = 0; it <= cases[c].get_int("SOLVER.MAX_ITER"); ++it) {
      if (it > 0) sched->step();
      const double expected = lrs[c][it].item<double>();
      if (std::isnan(expected)) continue;
      const double diff = std::abs(sgd.param_groups()[0].lr - expected);
      max_diff = std::max(max_diff, diff);
      ++compared;
      EXPECT_LE(diff, 1e-12) << "case " << c << " iteration " << it;
    }
  }
  std::cout << "[ parity ] " << compared << " lrs over " << cases.size()
            << " schedules, max |detkit - detectron2| = " << max_diff << "\n";
}

struct SgdCase {
  double momentum, dampening;
  bool nesterov;
  int clip_type;  // 0 none, 1 value, 2 norm
  double clip_value, norm_type;
};

void check_sgd(const SgdCase& hyper, const std::string& label) {
  CfgNode cfg = config::get_cfg();
  cfg.set("SOLVER.BASE_LR", 0.1);
  cfg.set("SOLVER.MAX_ITER", 6);
  cfg.set("SOLVER.WARMUP_ITERS", 2);
  cfg.set("SOLVER.WARMUP_FACTOR", 0.25);
  cfg.set("SOLVER.STEPS", CfgValue::list({4}));
  constexpr int kSteps = 6;
  torch::manual_seed(7);
  const std::vector<at::Tensor> initial{torch::randn({3, 4}), torch::randn({4}),
                                        torch::randn({2, 2, 3})};
  const std::vector<int64_t> group_of{0, 1, 0};
  const std::vector<double> group_lr{0.1, 0.2}, group_wd{1e-2, 0.0};
  TensorMap inputs;
  std::vector<std::vector<at::Tensor>> grads(kSteps);
  for (int s = 0; s < kSteps; ++s) {
    for (size_t k = 0; k < initial.size(); ++k) {
      grads[s].push_back(torch::randn_like(initial[k]) * 2);
      inputs["g." + std::to_string(s) + "." + std::to_string(k)] = grads[s][k];
    }
  }
  std::vector<at::Tensor> params;
  std::vector<ParamGroup> groups(2);
  for (size_t k = 0; k < initial.size(); ++k) {
    inputs["p." + std::to_string(k)] = initial[k];
    params.push_back(initial[k].clone().requires_grad_(true));
    ParamGroup& g = groups[group_of[k]];
    g.params.push_back(params.back());
    g.names.push_back("p." + std::to_string(k));
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].lr = group_lr[g];
    groups[g].weight_decay = group_wd[g];
  }
  auto [row, steps] = encode(cfg);
  inputs["case"] = row;
  inputs["steps"] = steps;
  inputs["group_of"] = torch::tensor(group_of, torch::kLong);
  inputs["group_lr"] = torch::tensor(group_lr, torch::kDouble);
  inputs["group_wd"] = torch::tensor(group_wd, torch::kDouble);
  inputs["hyper"] = torch::tensor({hyper.momentum, hyper.dampening, hyper.nesterov ? 1.0 : 0.0,
                                   double(hyper.clip_type), hyper.clip_value, hyper.norm_type},
                                  torch::kDouble);
  const TensorMap want = run_oracle("oracle_solver.py", "sgd", inputs);

  SGD sgd(
      std::move(groups),
      SGDOptions(0.1).momentum(hyper.momentum).dampening(hyper.dampening).nesterov(hyper.nesterov));
  if (hyper.clip_type > 0) {
    sgd.set_gradient_clipper(make_gradient_clipper(
        GradientClipOptions()
            .type(hyper.clip_type == 1 ? GradientClipType::kValue : GradientClipType::kNorm)
            .clip_value(hyper.clip_value)
            .norm_type(hyper.norm_type)));
  }
  auto sched = build_lr_scheduler(cfg, sgd);
  double lr_diff = 0;
  for (int s = 0; s < kSteps; ++s) {
    for (size_t k = 0; k < params.size(); ++k) params[k].mutable_grad() = grads[s][k].clone();
    for (size_t g = 0; g < 2; ++g) {
      lr_diff = std::max(lr_diff,
                         std::abs(sgd.param_groups()[g].lr - want.at("lrs")[s][g].item<double>()));
    }
    sgd.step();
    sched->step();
  }
  double param_diff = 0;
  for (size_t k = 0; k < params.size(); ++k) {
    const at::Tensor expected = want.at("p." + std::to_string(k));
    param_diff = std::max(param_diff, (params[k] - expected).abs().max().item<double>());
  }
  std::cout << "[ parity ] SGD " << label << ": max |param diff| = " << param_diff
            << ", max |lr diff| = " << lr_diff << "\n";
  EXPECT_LE(param_diff, 1e-6) << label;
  EXPECT_LE(lr_diff, 1e-12) << label;
}

TEST(SolverParity, SGDMatchesTorchOptim) {
  DETKIT_REQUIRE_ORACLE();
  check_sgd({0.9, 0.0, false, 0, 1.0, 2.0}, "momentum");
  check_sgd({0.9, 0.0, true, 0, 1.0, 2.0}, "nesterov");
  check_sgd({0.8, 0.3, false, 0, 1.0, 2.0}, "dampening");
  check_sgd({0.9, 0.0, false, 1, 0.5, 2.0}, "clip value");
  check_sgd({0.9, 0.0, true, 2, 1.5, 2.0}, "clip L2 norm");
  check_sgd({0.9, 0.0, false, 2, 0.7, INFINITY}, "clip inf norm");
}

}  // namespace
}  // namespace detkit::solver
