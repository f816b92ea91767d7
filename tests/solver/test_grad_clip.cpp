// Gradient clipping by value and by norm, per parameter as Detectron2 does.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "detkit/config/defaults.h"
#include "detkit/solver/build.h"
#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

at::Tensor with_grad(std::vector<float> grad) {
  auto p = torch::zeros({static_cast<int64_t>(grad.size())}, torch::requires_grad());
  p.mutable_grad() = torch::tensor(grad);
  return p;
}

void expect_grad(const at::Tensor& p, std::vector<float> want, double tol = 1e-6) {
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(p.grad()[i].item<float>(), want[i], tol) << i;
  }
}

TEST(GradClip, ByValue) {
  auto p = with_grad({3, -0.5, -2});
  clip_grad_value_({p}, 1.0);
  expect_grad(p, {1, -0.5, -1}, 0);
}

TEST(GradClip, ByNormTwo) {
  auto p = with_grad({3, 4});  // norm 5
  const at::Tensor total = clip_grad_norm_({p}, 1.0, 2.0);
  EXPECT_FLOAT_EQ(total.item<float>(), 5.0f);
  expect_grad(p, {0.6, 0.8});
  auto q = with_grad({0.3, 0.4});  // below the limit: unchanged
  clip_grad_norm_({q}, 1.0, 2.0);
  expect_grad(q, {0.3, 0.4}, 0);
}

TEST(GradClip, ByNormOneAndInfinity) {
  auto p = with_grad({3, -4});
  clip_grad_norm_({p}, 3.5, 1.0);  // L1 = 7
  expect_grad(p, {1.5, -2});
  auto q = with_grad({3, -4});
  clip_grad_norm_({q}, 2.0, std::numeric_limits<double>::infinity());  // max |g| = 4
  expect_grad(q, {1.5, -2});
}

TEST(GradClip, OptimizerClipsEachParameterOnItsOwn) {
  struct Two : torch::nn::Module {
    Two() {
      a = register_parameter("a", torch::zeros({2}));
      b = register_parameter("b", torch::zeros({2}));
    }
    at::Tensor a, b;
  } model;
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.BASE_LR", 1.0);
  cfg.set("SOLVER.MOMENTUM", 0.0);
  cfg.set("SOLVER.WEIGHT_DECAY", 0.0);
  cfg.set("SOLVER.CLIP_GRADIENTS.ENABLED", true);
  cfg.set("SOLVER.CLIP_GRADIENTS.CLIP_TYPE", "norm");
  cfg.set("SOLVER.CLIP_GRADIENTS.CLIP_VALUE", 1.0);
  auto sgd = build_optimizer(cfg, model);
  model.a.mutable_grad() = torch::tensor({3.0f, 4.0f});
  model.b.mutable_grad() = torch::tensor({0.3f, 0.4f});
  sgd->step();
  // Per parameter: a is scaled to norm 1, b (norm 0.5) is untouched. A global clip would have
  // scaled both by 1 / 5.02.
  EXPECT_TRUE(torch::allclose(model.a, torch::tensor({-0.6f, -0.8f}), 0, 1e-6));
  EXPECT_TRUE(torch::equal(model.b, torch::tensor({-0.3f, -0.4f})));

  cfg.set("SOLVER.CLIP_GRADIENTS.CLIP_TYPE", "value");
  cfg.set("SOLVER.CLIP_GRADIENTS.CLIP_VALUE", 0.35);
  auto by_value = build_optimizer(cfg, model);
  model.b.mutable_grad() = torch::tensor({0.3f, 0.4f});
  by_value->step();
  EXPECT_TRUE(torch::allclose(model.b, torch::tensor({-0.6f, -0.75f}), 0, 1e-6));
}

TEST(GradClip, UnknownClipTypeNamesTheKey) {
  auto cfg = config::get_cfg();
  cfg.set("SOLVER.CLIP_GRADIENTS.ENABLED", true);
  cfg.set("SOLVER.CLIP_GRADIENTS.CLIP_TYPE", "full_model");
  torch::nn::Linear model(2, 2);
  try {
    build_optimizer(cfg, *model);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SOLVER.CLIP_GRADIENTS.CLIP_TYPE"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'full_model'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'norm'"), std::string::npos);
  }
}

}  // namespace
}  // namespace detkit::solver
