// The loss scaler: PyTorch GradScaler's arithmetic (growth, backoff, the growth tracker, a grown
// scale that would overflow), the static scale, unscaling with inf/NaN detection, and the
// state in PyTorch's state_dict() layout.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cfloat>
#include <cmath>
#include <limits>

#include "detkit/solver/grad_scaler.h"
#include "detkit/solver/state_ivalue.h"
#include "detkit/utils/error.h"
#include "tests/support/error_of.h"

namespace detkit::solver {
namespace {

at::Tensor with_grad(const at::Tensor& grad) {
  auto p = torch::zeros(grad.sizes(), torch::requires_grad());
  p.mutable_grad() = grad;
  return p;
}

using testing::error_of;

TEST(GradScaler, DefaultsArePyTorchs) {
  GradScaler scaler;
  const GradScalerState s = scaler.state_dict();
  EXPECT_EQ(s.scale, 65536.0);
  EXPECT_EQ(s.growth_factor, 2.0);
  EXPECT_EQ(s.backoff_factor, 0.5);
  EXPECT_EQ(s.growth_interval, 2000);
  EXPECT_EQ(s.growth_tracker, 0);
  EXPECT_TRUE(scaler.dynamic());
}

TEST(GradScaler, DynamicScaleFollowsAHandComputedSequence) {
  // growth_interval 3: three clean steps double the scale, an overflow halves it and restarts
  // the count.
  GradScaler scaler(GradScalerOptions{}.init_scale(8).growth_interval(3));
  const std::vector<bool> overflow = {false, false, false, false, true, false, false,
                                      true,  true,  false, false, false, false};
  const std::vector<double> scale = {8, 8, 16, 16, 8, 8, 8, 4, 2, 2, 2, 4, 4};
  const std::vector<int64_t> tracker = {1, 2, 0, 1, 0, 1, 2, 0, 0, 1, 2, 0, 1};
  for (size_t i = 0; i < overflow.size(); ++i) {
    scaler.update(overflow[i]);
    EXPECT_EQ(scaler.scale(), scale[i]) << "after step " << i;
    EXPECT_EQ(scaler.growth_tracker(), tracker[i]) << "after step " << i;
  }
}

TEST(GradScaler, AGrowthThatWouldOverflowKeepsTheScale) {
  GradScaler scaler(GradScalerOptions{}.init_scale(FLT_MAX / 1.5).growth_interval(1));
  const double before = scaler.scale();
  scaler.update(false);  // FLT_MAX / 1.5 * 2 is not a float: kept, tracker reset
  EXPECT_EQ(scaler.scale(), before);
  EXPECT_EQ(scaler.growth_tracker(), 0);
}

TEST(GradScaler, AStaticScaleNeverChanges) {
  GradScaler scaler(GradScalerOptions{}.init_scale(64).dynamic(false).growth_interval(1));
  for (bool overflow : {false, true, true, false, false}) {
    scaler.update(overflow);
    EXPECT_EQ(scaler.scale(), 64.0);
  }
  // A checkpoint's scale does not replace the configured one.
  scaler.load_state_dict({1024.0, 2.0, 0.5, 2000, 7});
  EXPECT_EQ(scaler.scale(), 64.0);
}

TEST(GradScaler, ScalesTheLoss) {
  GradScaler scaler(GradScalerOptions{}.init_scale(1024));
  EXPECT_EQ(scaler.scale_loss(torch::tensor(0.75f)).item<float>(), 768.0f);
}

TEST(GradScaler, UnscaleDividesEveryGradientAndSkipsParametersWithout) {
  GradScaler scaler(GradScalerOptions{}.init_scale(1024));
  const at::Tensor big = torch::randn({100000});  // several chunks of the parallel loop
  auto a = with_grad(big * 1024), b = with_grad(torch::tensor({3.0f, -5.0f}) * 1024);
  auto none = torch::zeros({2}, torch::requires_grad());
  EXPECT_FALSE(scaler.unscale_({a, none, b}));
  EXPECT_TRUE(a.grad().equal(big));
  EXPECT_TRUE(b.grad().equal(torch::tensor({3.0f, -5.0f})));
  EXPECT_FALSE(none.grad().defined());
}

TEST(GradScaler, UnscaleFindsInfAndNaNAnywhere) {
  GradScaler scaler;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float bad : {inf, -inf, nan}) {
    for (int64_t where : {0, 7, 99999}) {
      at::Tensor g = torch::ones({100000});
      g[where] = bad;
      EXPECT_TRUE(scaler.unscale_({with_grad(torch::ones({3})), with_grad(g)}))
          << bad << " at " << where;
    }
  }
  // A finite gradient that the division does not make finite cannot exist; a huge one is fine.
  EXPECT_FALSE(scaler.unscale_({with_grad(torch::full({4}, FLT_MAX))}));
}

TEST(GradScaler, UnscaleTakesOtherDtypesAndLayouts) {
  GradScaler scaler(GradScalerOptions{}.init_scale(4));
  auto d = with_grad(torch::tensor({8.0, 4.0}, torch::kDouble));
  auto t = with_grad(torch::tensor({{4.0f, 8.0f}, {12.0f, 16.0f}}).t());  // not contiguous
  EXPECT_FALSE(scaler.unscale_({d, t}));
  EXPECT_TRUE(d.grad().equal(torch::tensor({2.0, 1.0}, torch::kDouble)));
  EXPECT_TRUE(t.grad().equal(torch::tensor({{1.0f, 3.0f}, {2.0f, 4.0f}})));
  auto n = with_grad(torch::tensor({1.0, std::nan("")}, torch::kDouble));
  EXPECT_TRUE(scaler.unscale_({n}));
}

TEST(GradScaler, StateRoundTripsInPyTorchsLayout) {
  GradScaler scaler(GradScalerOptions{}.init_scale(256).growth_interval(5));
  scaler.update(false), scaler.update(false);
  const c10::IValue v = grad_scaler_state_to_ivalue(scaler.state_dict());
  const auto d = v.toGenericDict();
  EXPECT_EQ(d.size(), 5u);
  EXPECT_EQ(d.at(std::string("scale")).toDouble(), 256.0);
  EXPECT_EQ(d.at(std::string("growth_factor")).toDouble(), 2.0);
  EXPECT_EQ(d.at(std::string("backoff_factor")).toDouble(), 0.5);
  EXPECT_EQ(d.at(std::string("growth_interval")).toInt(), 5);
  EXPECT_EQ(d.at(std::string("_growth_tracker")).toInt(), 2);

  GradScaler restored;
  restored.load_state_dict(grad_scaler_state_from_ivalue(v));
  EXPECT_EQ(restored.scale(), 256.0);
  EXPECT_EQ(restored.growth_tracker(), 2);
  for (int i = 0; i < 3; ++i) restored.update(false), scaler.update(false);
  EXPECT_EQ(restored.scale(), 512.0);  // the restored interval (5), not the default 2000
  EXPECT_EQ(restored.scale(), scaler.scale());
}

TEST(GradScaler, BadSettingsAndStatesAreNamed) {
  const std::vector<std::pair<GradScalerOptions, std::string>> bad_settings = {
      {GradScalerOptions{}.init_scale(0), "scale must be a positive finite number, got 0"},
      {GradScalerOptions{}.init_scale(1e300), "scale 1e+300 does not fit a float"},
      {GradScalerOptions{}.growth_factor(1), "growth_factor must be above 1, got 1"},
      {GradScalerOptions{}.backoff_factor(1), "backoff_factor must be in (0, 1), got 1"},
      {GradScalerOptions{}.growth_interval(0), "growth_interval must be at least 1, got 0"}};
  for (const auto& [options, message] : bad_settings) {
    const std::string got = error_of([&] { GradScaler{options}; });
    EXPECT_NE(got.find("loss scaler: " + message), std::string::npos) << got;
  }
  GradScaler scaler;
  const std::string bad = error_of([&] { scaler.load_state_dict({-1, 2, 0.5, 2000, 0}); });
  EXPECT_NE(bad.find("checkpoint entry 'grad_scaler': scale must be"), std::string::npos) << bad;
  EXPECT_EQ(scaler.scale(), 65536.0);  // unchanged
  c10::Dict<c10::IValue, c10::IValue> missing(c10::AnyType::get(), c10::AnyType::get());
  missing.insert(std::string("scale"), 2.0);
  const std::string absent = error_of([&] { grad_scaler_state_from_ivalue(missing); });
  EXPECT_NE(absent.find("grad_scaler has no 'growth_factor'"), std::string::npos) << absent;
}

}  // namespace
}  // namespace detkit::solver
