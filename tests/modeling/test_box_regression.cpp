// detkit::modeling::Box2BoxTransform: hand-computed deltas and boxes, the round trip, the clamp of
// huge dw / dh, zero-size and empty inputs, and parity with torchvision's BoxCoder.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <array>
#include <cmath>
#include <iostream>
#include <limits>
#include <vector>

#include "detkit/config/defaults.h"
#include "detkit/modeling/box_regression.h"
#include "detkit/utils/error.h"
#include "tests/parity/oracle.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::max_abs_diff;

namespace detkit::modeling {
namespace {

at::Tensor boxes(std::initializer_list<float> values) {
  return at::tensor(std::vector<float>(values)).reshape({-1, 4});
}

// (n, 4) boxes with x1 in [0, 50), width in [1, 60), likewise in y.
at::Tensor random_boxes(int64_t n, at::Generator& gen) {
  const at::Tensor xy = at::rand({n, 2}, gen) * 50;
  const at::Tensor wh = at::rand({n, 2}, gen) * 59 + 1;
  return at::cat({xy, xy + wh}, 1);
}

TEST(Box2BoxTransformTest, GetDeltasByHand) {
  // src: centre (5, 5), size 10 x 10; target: centre (7, 8), size 10 x 12.
  const at::Tensor src = boxes({0, 0, 10, 10});
  const at::Tensor target = boxes({2, 2, 12, 14});
  const at::Tensor unit = Box2BoxTransform({1, 1, 1, 1}).get_deltas(src, target);
  const at::Tensor want_unit = at::tensor({0.2f, 0.3f, 0.0f, std::log(1.2f)}).reshape({1, 4});
  EXPECT_LT(max_abs_diff(unit, want_unit), 1e-6);
  const at::Tensor weighted = Box2BoxTransform({10, 10, 5, 5}).get_deltas(src, target);
  const at::Tensor want_weighted =
      at::tensor({2.0f, 3.0f, 0.0f, 5 * std::log(1.2f)}).reshape({1, 4});
  EXPECT_LT(max_abs_diff(weighted, want_weighted), 1e-6);
}

TEST(Box2BoxTransformTest, ApplyDeltasByHand) {
  // Box centre (5, 10), size 10 x 20; dx 0.1 -> +1, dy -0.2 -> -4, width doubles.
  const at::Tensor box = boxes({0, 0, 10, 20});
  const at::Tensor deltas = at::tensor({0.1f, -0.2f, std::log(2.0f), 0.0f}).reshape({1, 4});
  const at::Tensor out = Box2BoxTransform({1, 1, 1, 1}).apply_deltas(deltas, box);
  EXPECT_LT(max_abs_diff(out, boxes({-4, -4, 16, 16})), 1e-5);
  // With weights (10, 10, 5, 5) the same move needs deltas scaled by the weights.
  const at::Tensor scaled = deltas * at::tensor({10.0f, 10.0f, 5.0f, 5.0f});
  const at::Tensor out_w = Box2BoxTransform({10, 10, 5, 5}).apply_deltas(scaled, box);
  EXPECT_LT(max_abs_diff(out_w, boxes({-4, -4, 16, 16})), 1e-5);
}

TEST(Box2BoxTransformTest, SeveralTransformsPerBox) {
  // (1, 8): two class-specific transforms of one box, decoded independently.
  const at::Tensor box = boxes({0, 0, 10, 20});
  const at::Tensor deltas =
      at::tensor({0.0f, 0.0f, 0.0f, 0.0f, 0.1f, -0.2f, std::log(2.0f), 0.0f}).reshape({1, 8});
  const at::Tensor out = Box2BoxTransform({1, 1, 1, 1}).apply_deltas(deltas, box);
  EXPECT_LT(
      max_abs_diff(out, at::tensor({0.f, 0.f, 10.f, 20.f, -4.f, -4.f, 16.f, 16.f}).reshape({1, 8})),
      1e-5);
}

TEST(Box2BoxTransformTest, RoundTrip) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const at::Tensor src = random_boxes(200, gen);
  const at::Tensor target = random_boxes(200, gen);
  for (const auto& weights : std::vector<std::array<double, 4>>{{1, 1, 1, 1}, {10, 10, 5, 5}}) {
    const Box2BoxTransform transform(weights);
    const at::Tensor back = transform.apply_deltas(transform.get_deltas(src, target), src);
    const double diff = max_abs_diff(back, target);
    std::cout << "apply_deltas(get_deltas(src, target), src) vs target, weights " << weights[0]
              << "," << weights[1] << "," << weights[2] << "," << weights[3] << ": max abs diff "
              << diff << "\n";
    EXPECT_LT(diff, 1e-4);  // coordinates up to ~110 in fp32
  }
}

TEST(Box2BoxTransformTest, HugeScaleDeltasAreClamped) {
  // dw = dh = 100 would overflow exp(); clamped to log(1000 / 16) a 16 px box becomes 1000 px.
  const at::Tensor box = boxes({0, 0, 16, 16});
  const at::Tensor deltas = at::tensor({0.0f, 0.0f, 100.0f, 100.0f}).reshape({1, 4});
  const at::Tensor out = Box2BoxTransform({1, 1, 1, 1}).apply_deltas(deltas, box);
  EXPECT_TRUE(at::isfinite(out).all().item<bool>());
  EXPECT_LT(max_abs_diff(out, boxes({-492, -492, 508, 508})), 1e-3);
  // With weights the clamp applies to dw / ww: 5 * 100 / 5 = 100 is clamped the same way.
  const at::Tensor weighted =
      Box2BoxTransform({10, 10, 5, 5})
          .apply_deltas(at::tensor({0.f, 0.f, 500.f, 500.f}).reshape({1, 4}), box);
  EXPECT_LT(max_abs_diff(weighted, boxes({-492, -492, 508, 508})), 1e-3);
  // A custom clamp; very negative dw is not clamped (the box shrinks towards its centre).
  const at::Tensor custom =
      Box2BoxTransform({1, 1, 1, 1}, std::log(2.0))
          .apply_deltas(at::tensor({0.f, 0.f, 5.f, -100.f}).reshape({1, 4}), box);
  EXPECT_LT(max_abs_diff(custom, boxes({-8, 8, 24, 8})), 1e-5);
  EXPECT_NEAR(kDefaultScaleClamp, 4.135166556742356, 1e-15);
}

TEST(Box2BoxTransformTest, ZeroSizeBoxes) {
  const Box2BoxTransform transform({1, 1, 1, 1});
  // A zero-size box stays a point at its centre, shifted by nothing (dx * width = 0).
  const at::Tensor point = boxes({5, 7, 5, 7});
  const at::Tensor moved =
      transform.apply_deltas(at::tensor({1.f, 1.f, 1.f, 1.f}).reshape({1, 4}), point);
  EXPECT_LT(max_abs_diff(moved, point), 1e-6);
  // A zero-size target gives dw = dh = -inf, as in Detectron2.
  const at::Tensor deltas = transform.get_deltas(boxes({0, 0, 10, 10}), point);
  EXPECT_TRUE(std::isinf(deltas[0][2].item<float>()) && deltas[0][2].item<float>() < 0);
  // A zero-width source box is invalid.
  EXPECT_THROW(transform.get_deltas(point, point), c10::Error);
}

TEST(Box2BoxTransformTest, EmptyInputs) {
  const Box2BoxTransform transform({10, 10, 5, 5});
  const at::Tensor none = at::zeros({0, 4});
  EXPECT_EQ(transform.get_deltas(none, none).sizes(), (at::IntArrayRef{0, 4}));
  EXPECT_EQ(transform.apply_deltas(at::zeros({0, 8}), none).sizes(), (at::IntArrayRef{0, 8}));
}

TEST(Box2BoxTransformTest, DecodesInFloat32) {
  const at::Tensor out = Box2BoxTransform({1, 1, 1, 1})
                             .apply_deltas(at::zeros({1, 4}, at::kDouble), boxes({0, 0, 4, 4}));
  EXPECT_EQ(out.scalar_type(), at::kFloat);
}

TEST(Box2BoxTransformTest, RejectsBadInput) {
  const Box2BoxTransform transform({1, 1, 1, 1});
  EXPECT_THROW(transform.apply_deltas(at::zeros({2, 6}), at::zeros({2, 4})), c10::Error);
  EXPECT_THROW(transform.apply_deltas(at::zeros({3, 4}), at::zeros({2, 4})), c10::Error);
  EXPECT_THROW(transform.get_deltas(at::zeros({2, 5}), at::zeros({2, 5})), c10::Error);
  EXPECT_THROW(Box2BoxTransform({1, 0, 1, 1}), detkit::Error);
}

TEST(Box2BoxTransformTest, MatchesTorchvisionBoxCoder) {
  DETKIT_REQUIRE_ORACLE();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  const int64_t n = 500;
  const at::Tensor src = random_boxes(n, gen);
  const at::Tensor target = random_boxes(n, gen);
  // Two transforms per box; some scale deltas far beyond the clamp.
  at::Tensor deltas = at::randn({n, 8}, gen) * 2;
  deltas.slice(0, 0, 50).select(1, 2).fill_(40.0f);
  deltas.slice(0, 25, 75).select(1, 7).fill_(-30.0f);
  for (const auto& weights : std::vector<std::array<double, 4>>{{1, 1, 1, 1}, {10, 10, 5, 5}}) {
    const Box2BoxTransform transform(weights);
    const at::Tensor params = at::tensor(
        {weights[0], weights[1], weights[2], weights[3], transform.scale_clamp()}, at::kDouble);
    const auto want = testing::run_oracle(
        "oracle_modeling.py", "box_regression",
        {{"src", src}, {"target", target}, {"deltas", deltas}, {"params", params}});
    const double encode = max_abs_diff(transform.get_deltas(src, target), want.at("deltas"));
    const double decode = max_abs_diff(transform.apply_deltas(deltas, src), want.at("boxes"));
    std::cout << "Box2BoxTransform vs torchvision BoxCoder, weights " << weights[0] << ","
              << weights[1] << "," << weights[2] << "," << weights[3]
              << ": get_deltas max abs diff " << encode << ", apply_deltas max abs diff " << decode
              << "\n";
    EXPECT_LE(encode, 1e-5);
    EXPECT_LE(decode, 1e-5);
  }
}

}  // namespace
}  // namespace detkit::modeling

namespace detkit::modeling {

TEST(Box2BoxTransformConfig, WeightsFromConfigOrANamedError) {
  config::CfgNode cfg = config::get_cfg();
  EXPECT_EQ(box_reg_weights_from_config(cfg, "MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS"),
            (std::array<double, 4>{10, 10, 5, 5}));
  cfg.merge_from_list({"MODEL.RPN.BBOX_REG_WEIGHTS", "(1.0, 2.0)"});
  try {
    box_reg_weights_from_config(cfg, "MODEL.RPN.BBOX_REG_WEIGHTS");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "MODEL.RPN.BBOX_REG_WEIGHTS must have 4 values (wx, wy, ww, wh), got 2");
  }
}

}  // namespace detkit::modeling
