#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "tests/support/bools.h"

#include "detkit/structures/box_mode.h"
#include "detkit/structures/boxes.h"

namespace detkit::structures {
using testing::bools;

namespace {
at::Tensor t(std::vector<float> values, int64_t rows) {
  return at::tensor(values, at::kFloat).reshape({rows, -1});
}
}  // namespace

TEST(Boxes, AreaCentersNonemptyScale) {
  Boxes b(t({0, 0, 10, 10, 5, 5, 5, 20, 2, 4, 6, 12}, 3));
  EXPECT_TRUE(b.area().equal(at::tensor({100.f, 0.f, 32.f})));
  EXPECT_TRUE(b.centers()[2].equal(at::tensor({4.f, 8.f})));
  EXPECT_TRUE(b.nonempty().equal(bools({1, 0, 1})));
  EXPECT_TRUE(b.nonempty(4.5).equal(bools({1, 0, 0})));
  b.scale(2.0, 0.5);
  EXPECT_TRUE(b.tensor()[0].equal(at::tensor({0.f, 0.f, 20.f, 5.f})));
}

TEST(Boxes, ClipIntoTheImage) {
  Boxes b(t({-5, -3, 50, 40, 10, 10, 20, 20}, 2));
  b.clip(/*height=*/30, /*width=*/40);
  EXPECT_TRUE(b.tensor().equal(t({0, 0, 40, 30, 10, 10, 20, 20}, 2)));
  Boxes bad(t({0, 0, std::numeric_limits<float>::infinity(), 1}, 1));
  EXPECT_THROW(bad.clip(10, 10), c10::Error);
}

// Boxes decoded by a differentiable op (a reshape view of a graph node, as the box predictor's
// per-class boxes) clip with gradients on; clamped coordinates get no gradient.
TEST(Boxes, ClipWorksOnBoxesAutogradTracks) {
  const at::Tensor deltas = t({-5, -3, 50, 40, 10, 10, 20, 20}, 2).requires_grad_();
  Boxes b((deltas * 1.0).reshape({-1, 4}));
  b.clip(/*height=*/30, /*width=*/40);
  EXPECT_TRUE(b.tensor().detach().equal(t({0, 0, 40, 30, 10, 10, 20, 20}, 2)));
  b.tensor().sum().backward();
  EXPECT_TRUE(deltas.grad().equal(t({0, 0, 0, 0, 1, 1, 1, 1}, 2)));
  EXPECT_EQ(Boxes(at::zeros({0, 4})).tensor().sizes(), (at::IntArrayRef{0, 4}));
  Boxes empty(at::zeros({0, 4}));
  empty.clip(10, 10);
  EXPECT_EQ(empty.tensor().sizes(), (at::IntArrayRef{0, 4}));
}

TEST(Boxes, InsideBox) {
  Boxes b(t({-1, 0, 5, 5, 0, 0, 10, 10, 0, 0, 9, 9}, 3));
  EXPECT_TRUE(b.inside_box(10, 10).equal(bools({0, 0, 1})));
  EXPECT_TRUE(b.inside_box(10, 10, 1).equal(bools({1, 1, 1})));
}

TEST(Boxes, IndexAndCatAndEmpty) {
  Boxes b(t({0, 0, 1, 1, 0, 0, 2, 2, 0, 0, 3, 3}, 3));
  EXPECT_EQ(b.index(at::tensor({2, 0}, at::kLong)).tensor()[0][2].item<float>(), 3.f);
  EXPECT_EQ(b.index(bools({0, 1, 1})).size(), 2);
  EXPECT_THROW(b.index(bools({1, 0})), c10::Error);
  EXPECT_EQ(Boxes::cat({b, b}).size(), 6);
  EXPECT_EQ(Boxes().size(), 0);
  EXPECT_EQ(Boxes(at::zeros({0}, at::kFloat)).tensor().sizes(), (at::IntArrayRef{0, 4}));
  EXPECT_THROW(Boxes(at::zeros({3, 5})), c10::Error);
  EXPECT_THROW(Boxes(at::zeros({3, 4}, at::kLong)), c10::Error);
}

TEST(Boxes, PairwiseIouAndIoa) {
  Boxes a(t({0, 0, 10, 10, 20, 20, 30, 30}, 2));
  Boxes b(t({5, 5, 15, 15, 0, 0, 10, 10, 40, 40, 40, 40}, 3));
  at::Tensor iou = pairwise_iou(a, b);
  ASSERT_EQ(iou.sizes(), (at::IntArrayRef{2, 3}));
  EXPECT_NEAR(iou[0][0].item<float>(), 25.f / 175.f, 1e-7);
  EXPECT_EQ(iou[0][1].item<float>(), 1.f);
  EXPECT_EQ(iou[0][2].item<float>(), 0.f);  // empty box: 0, not NaN
  EXPECT_NEAR(iou[1][0].item<float>(), 0.f, 0);
  at::Tensor ioa = pairwise_ioa(a, b);
  EXPECT_NEAR(ioa[0][0].item<float>(), 0.25f, 1e-7);
  EXPECT_EQ(ioa[0][2].item<float>(), 0.f);
  EXPECT_EQ(pairwise_iou(Boxes(), b).sizes(), (at::IntArrayRef{0, 3}));
}

TEST(BoxMode, ConvertsBothWays) {
  at::Tensor xywh = t({10, 20, 5, 6}, 1);
  at::Tensor xyxy = convert_box_mode(xywh, BoxMode::XYWH_ABS, BoxMode::XYXY_ABS);
  EXPECT_TRUE(xyxy.equal(t({10, 20, 15, 26}, 1)));
  EXPECT_TRUE(xywh.equal(t({10, 20, 5, 6}, 1)));  // input untouched
  EXPECT_TRUE(convert_box_mode(xyxy, BoxMode::XYXY_ABS, BoxMode::XYWH_ABS).equal(xywh));
  auto arr = convert_box_mode(std::array<double, 4>{1, 2, 3, 4}, BoxMode::XYWH_ABS, BoxMode::XYXY_ABS);
  EXPECT_EQ(arr, (std::array<double, 4>{1, 2, 4, 6}));
}

}  // namespace detkit::structures
