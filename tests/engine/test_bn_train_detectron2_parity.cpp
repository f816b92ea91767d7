// Twelve training steps in a row against Detectron2 (../shared/fixtures/detectron2_bn_train):
// trainable BatchNorm, Detectron2's optimizer groups, momentum, weight decay and LR schedule, run
// through detkit's Trainer with the LR scheduler hook, once with the 1000-iteration warm-up and
// once at a constant LR. Tolerances are the fixture README's (Detectron2 against itself, 1 vs 2
// threads); every comparison prints what it saw.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "detkit/engine/hooks.h"
#include "detkit/engine/trainer.h"
#include "detkit/layers/conv2d.h"
#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/solver/build.h"
#include "tests/modeling/meta_arch/fixture_targets.h"
#include "tests/support/bn_train_fixture.h"
#include "tests/support/detectron2_fixture.h"
#include "tests/support/scalar_parity.h"

namespace detkit::engine {
namespace {

using checkpoint::TensorDict;

// What each step left: the losses, the lr each group applied, the recorded gradients.
struct StepRecord {
  std::map<std::string, double> losses;
  std::map<std::string, double> scalars;  // everything the storage got at this iteration
  std::vector<double> lrs;
  TensorDict grads;
  bool finite_grads = true;
};

// Registered before the LR scheduler hook, so it sees the lr the step just applied.
class Recorder : public HookBase {
 public:
  Recorder(std::vector<std::string> grad_names, std::vector<StepRecord>& out, TensorDict& after0)
      : grad_names_(std::move(grad_names)), out_(out), after0_(after0) {}
  void after_step(Trainer& t) override {
    StepRecord r;
    for (const auto& name : t.storage().names()) {
      const auto [value, iter] = t.storage().latest(name);
      if (name.rfind("loss_", 0) == 0) r.losses[name] = value;
      if (iter == t.iter()) r.scalars[name] = value;
    }
    for (size_t g = 0; g < t.optimizer().num_groups(); ++g) r.lrs.push_back(t.optimizer().group(g).lr);
    auto params = t.model().named_parameters();
    for (const auto& item : params) {
      const at::Tensor& grad = item.value().grad();
      if (grad.defined() && !grad.isfinite().all().item<bool>()) r.finite_grads = false;
    }
    for (const auto& name : grad_names_) r.grads[name] = params[name].grad().detach().clone();
    if (t.iter() == 0)
      for (const auto& [name, value] : checkpoint::state_dict(t.model()))
        after0_[name] = value.detach().clone();
    out_.push_back(std::move(r));
  }

 private:
  std::vector<std::string> grad_names_;
  std::vector<StepRecord>& out_;
  TensorDict& after0_;
};

double l2_rel(const at::Tensor& got, const at::Tensor& want) {
  return (got.to(at::kDouble) - want.to(at::kDouble)).norm().item<double>() /
         want.to(at::kDouble).norm().item<double>();
}
double max_rel(const at::Tensor& got, const at::Tensor& want) {
  const at::Tensor w = want.to(at::kDouble);
  return (got.to(at::kDouble) - w).abs().max().item<double>() /
         std::max(w.abs().max().item<double>(), 1e-30);
}
bool in_resnet(const std::string& name) { return name.find("bottom_up") != std::string::npos; }

// The README's per-step loss tolerances: {total, cls, box_reg, mask, rpn_cls, rpn_loc}.
std::map<std::string, double> loss_tolerances(const std::string& sequence, size_t step) {
  auto row = [](double total, double cls, double box, double mask, double rpn_cls, double rpn_loc) {
    return std::map<std::string, double>{{"total", total},          {"loss_cls", cls},
                                         {"loss_box_reg", box},     {"loss_mask", mask},
                                         {"loss_rpn_cls", rpn_cls}, {"loss_rpn_loc", rpn_loc}};
  };
  if (step == 0) return row(1e-4, 1e-4, 1e-4, 1e-4, 1e-4, 1e-4);
  if (sequence == "warmup1000") {
    if (step <= 3) return row(2e-3, 1e-3, 0.3, 2e-4, 2e-4, 5e-4);
    if (step <= 7) return row(1e-2, 3e-3, 0.3, 1e-3, 3e-4, 5e-3);
    return row(5e-2, 5e-2, 0.5, 1e-3, 3e-4, 1e-2);
  }
  if (step == 1) return row(1e-2, 2e-2, 0.3, 1e-3, 3e-4, 2e-3);
  if (step == 2) return row(0.15, 0.3, 0.5, 5e-3, 1e-3, 1e-2);
  return row(0.5, 1.0, 0.6, 3e-2, 5e-3, 3e-2);
}

void check_sequence(const std::string& sequence) {
  testing::BnTrainFixture fx;
  testing::Detectron2Fixture images;  // the same two images, mapped by Detectron2
  if (!fx.present() || !images.present())
    GTEST_SKIP() << "fixture absent: " << fx.dir << " or " << images.dir;
  const auto& out = fx.outputs();
  const auto& meta = fx.meta();
  const size_t num_steps = meta["steps"].get<size_t>();

  auto cfg = fx.config(sequence);
  // At LR 0.01 from step 0 the 12 steps are chaotic (the fixture's README: Detectron2 at 1 vs 2
  // threads already ends 6 % apart in the whole update norm). That sequence runs libtorch's
  // kernels throughout (CONV_ALGORITHM direct), which Detectron2 ran: with kernels rounding about
  // 10x more than theirs in float32 the drift measured 1.31 against the ×[0.8, 1.25] band
  // (direct: 1.08). The warm-up sequence, not chaotic, runs the default and stays within every
  // tolerance.
  if (sequence == "warmup0") cfg.merge_from_list({"CONV_ALGORITHM", "direct"});
  struct RestoreDefault {  // build_model sets the process's algorithm; later tests get the default
    ~RestoreDefault() { layers::set_conv_algorithm(layers::ConvAlgorithm::kAuto); }
  } restore;
  auto model = modeling::build_model(cfg);
  auto report = checkpoint::load_state_dict(*model, fx.weights());
  ASSERT_TRUE(report.complete()) << report.summary();
  EXPECT_EQ(report.loaded, fx.weights().size());
  TensorDict initial = checkpoint::state_dict(*model);
  for (auto& [name, value] : initial) value = value.detach().clone();

  auto batch = testing::fixture_training_batch(images);
  for (int i = 0; i < 2; ++i) {
    const at::Tensor want = out.at("train_gt_boxes_" + std::to_string(i));
    const at::Tensor got = batch[i].instances->boxes("gt_boxes").tensor();
    ASSERT_EQ(got.sizes(), want.sizes());
    ASSERT_LT((got - want).abs().max().item<double>(), 1e-4);
  }

  auto optimizer = solver::build_optimizer(cfg, *model);
  // Detectron2's two groups: 95 conv/linear tensors with weight decay, 106 BN tensors without.
  const auto& want_groups = meta["sequences"][sequence]["param_groups"];
  ASSERT_EQ(optimizer->param_groups().size(), want_groups.size());
  for (size_t g = 0; g < want_groups.size(); ++g) {
    EXPECT_EQ(optimizer->param_groups()[g].names,
              want_groups[g]["params"].get<std::vector<std::string>>());
    EXPECT_EQ(optimizer->param_groups()[g].weight_decay, want_groups[g]["weight_decay"]);
  }
  auto scheduler = solver::build_lr_scheduler(cfg, *optimizer);

  const std::vector<std::string> grad_names = meta["recorded_gradients"];

  std::vector<StepRecord> steps;
  TensorDict after0;
  Trainer trainer(
      model, *optimizer, [&batch] { return batch; }, /*seed=*/0);
  trainer.register_hook(std::make_shared<Recorder>(grad_names, steps, after0));
  trainer.register_hook(std::make_shared<LRSchedulerHook>(*scheduler));
  trainer.train(0, static_cast<int64_t>(num_steps));
  ASSERT_EQ(steps.size(), num_steps);

  // Losses and learning rates, step by step.
  double mean_late = 0, want_mean_late = 0;
  for (size_t k = 0; k < num_steps; ++k) {
    const auto& want = fx.step(sequence, k);
    const auto tol = loss_tolerances(sequence, k);
    double total = 0;
    for (const auto& [name, value] : steps[k].losses) total += value;
    std::cout << "[ detectron2 multi-step ] " << sequence << " step " << k << " lr "
              << steps[k].lrs[0] << " total " << total << " vs "
              << want["total_loss"].get<double>();
    for (const auto& [name, w] : want["losses"].items()) {
      ASSERT_TRUE(steps[k].losses.count(name)) << name;
      const double rel = std::abs(steps[k].losses.at(name) - w.get<double>()) / w.get<double>();
      std::cout << " " << name << " " << rel;
      EXPECT_LE(rel, tol.at(name)) << sequence << " step " << k << " " << name;
    }
    const double total_rel =
        std::abs(total - want["total_loss"].get<double>()) / want["total_loss"].get<double>();
    std::cout << " (relative diffs; total " << total_rel << ")\n";
    EXPECT_LE(total_rel, tol.at("total")) << sequence << " step " << k;
    EXPECT_TRUE(std::isfinite(total) && steps[k].finite_grads) << sequence << " step " << k;
    // The model's event scalars (rpn/*, roi_head/*, fast_rcnn/*, mask_rcnn/*) through the
    // trainer's storage. Step 0 within the losses' 1e-4 (mask_rcnn/accuracy counts pixels whose
    // logit sign a 1e-5 difference flips: 2.9e-5 measured); later steps, whose weights already
    // differ within the tolerances above and whose samples then differ, within 25 % (measured:
    // at most 9.3 %), which still catches a count per ROI instead of per image or a sum for a mean.
    std::map<std::string, double> model_scalars;
    for (const auto& [name, w] : want["event_scalars"].items())
      if (steps[k].scalars.count(name)) model_scalars[name] = steps[k].scalars.at(name);
    testing::expect_scalars_match(model_scalars, want["event_scalars"],
                                  sequence + " step " + std::to_string(k), k == 0 ? 1e-4 : 0.25);
    const auto& want_lrs = want["lr_per_group"];
    ASSERT_EQ(steps[k].lrs.size(), want_lrs.size());
    for (size_t g = 0; g < want_lrs.size(); ++g)
      EXPECT_NEAR(steps[k].lrs[g], want_lrs[g].get<double>(), 1e-12 * want_lrs[g].get<double>())
          << sequence << " step " << k << " group " << g;
    if (k >= 8) mean_late += total / 4, want_mean_late += want["total_loss"].get<double>() / 4;
  }
  if (sequence == "warmup0") {
    std::cout << "[ detectron2 multi-step ] mean total loss of steps 8-11: " << mean_late << " vs "
              << want_mean_late << "\n";
    EXPECT_LE(std::abs(mean_late - want_mean_late) / want_mean_late, 0.25);
  }

  // Step 0: gradients (L2), and BN buffers and parameters after the first update.
  for (const std::string& name : meta["recorded_gradients"]) {
    const double rel = l2_rel(steps[0].grads.at(name), out.at(sequence + ".grad_step0." + name));
    std::cout << "[ detectron2 multi-step ] " << sequence << " step-0 grad " << name << " L2 rel "
              << rel << "\n";
    EXPECT_LE(rel, in_resnet(name) ? 0.1 : 1e-2) << name;
  }
  const std::string after = sequence + ".after_step0.";
  double worst_buffer = 0;
  for (const auto& [key, want] : out) {
    if (key.rfind(after, 0) != 0) continue;
    const std::string name = key.substr(after.size());
    ASSERT_TRUE(after0.count(name)) << name;
    if (name.find("running_") != std::string::npos) {
      worst_buffer = std::max(worst_buffer, max_rel(after0.at(name), want));
    } else if (name.find("num_batches_tracked") != std::string::npos) {
      EXPECT_EQ(after0.at(name).item<int64_t>(), 1) << name;
    } else if (sequence == "warmup0") {  // at warm-up LR 1e-5 the update is about one ulp
      const double rel = l2_rel(after0.at(name) - initial.at(name), want - initial.at(name));
      std::cout << "[ detectron2 multi-step ] first update of " << name << " L2 rel " << rel
                << "\n";
      EXPECT_LE(rel, in_resnet(name) ? 0.1 : 3e-2) << name;
    }
  }
  std::cout << "[ detectron2 multi-step ] " << sequence
            << " BN running stats after step 0: max rel diff " << worst_buffer << "\n";
  EXPECT_LE(worst_buffer, 1e-5);

  // After the last step: the whole update and each tensor's, and the BN running statistics.
  const TensorDict final_state = checkpoint::state_dict(*model);
  const std::string fin = sequence + ".final.";
  double got_sq = 0, want_sq = 0;
  std::vector<double> ratios;
  for (const auto& item : model->named_parameters()) {
    const at::Tensor p0 = initial.at(item.key()).to(at::kDouble);
    const double got = (final_state.at(item.key()).to(at::kDouble) - p0).norm().item<double>();
    const double want = (out.at(fin + item.key()).to(at::kDouble) - p0).norm().item<double>();
    got_sq += got * got, want_sq += want * want;
    if (want > 0) ratios.push_back(got / want);
  }
  ASSERT_FALSE(ratios.empty());
  double worst_stats = 0, stats_got_sq = 0, stats_want_sq = 0;
  for (const auto& [name, value] : final_state) {
    if (name.find("num_batches_tracked") != std::string::npos)
      EXPECT_EQ(value.item<int64_t>(), static_cast<int64_t>(num_steps)) << name;
    if (name.find("running_") == std::string::npos) continue;
    const at::Tensor want = out.at(fin + name).to(at::kDouble);
    const at::Tensor init = initial.at(name).to(at::kDouble);
    worst_stats = std::max(worst_stats, max_rel(value, want));
    stats_got_sq += (value.to(at::kDouble) - init).pow(2).sum().item<double>();
    stats_want_sq += (want - init).pow(2).sum().item<double>();
  }
  const double stats_change = std::sqrt(stats_got_sq / stats_want_sq);
  std::sort(ratios.begin(), ratios.end());
  const double whole = std::sqrt(got_sq / want_sq);
  const double median = ratios[ratios.size() / 2];
  std::cout << "[ detectron2 multi-step ] " << sequence << " after " << num_steps
            << " steps: ||theta_12 - theta_0|| ratio " << whole << ", per-tensor update ratio min "
            << ratios.front() << " median " << median << " max " << ratios.back() << "\n";
  EXPECT_GE(whole, 0.8);
  EXPECT_LE(whole, 1.25);
  EXPECT_GE(ratios.front(), 0.2);
  EXPECT_LE(ratios.back(), 5.0);
  EXPECT_GE(median, 0.9);
  EXPECT_LE(median, 1.1);
  if (sequence == "warmup1000") {
    std::cout << "[ detectron2 multi-step ] BN running stats after 12 steps: max rel diff "
              << worst_stats << ", their change from init " << stats_change << "x Detectron2's\n";
    EXPECT_LE(worst_stats, 0.15);
    EXPECT_GE(stats_change, 0.95);
    EXPECT_LE(stats_change, 1.05);
  }
}

TEST(BnTrainParity, WarmupTwelveStepsMatchDetectron2) { check_sequence("warmup1000"); }
TEST(BnTrainParity, ConstantLrTwelveStepsMatchDetectron2) { check_sequence("warmup0"); }

}  // namespace
}  // namespace detkit::engine
