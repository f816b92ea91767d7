// detkit::ops::box_iou: the parallel kernel against a plain loop, edge cases, parity with
// torchvision.ops.box_iou.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "detkit/ops/box_iou.h"
#include "tests/parity/oracle.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::max_abs_diff;

namespace detkit::ops {
namespace {

at::Tensor reference_iou(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  auto p = ad.accessor<double, 2>();
  auto q = bd.accessor<double, 2>();
  at::Tensor iou = at::empty({a.size(0), b.size(0)}, ad.options());
  auto out = iou.accessor<double, 2>();
  for (int64_t i = 0; i < a.size(0); ++i) {
    for (int64_t j = 0; j < b.size(0); ++j) {
      const double w = std::max(0.0, std::min(p[i][2], q[j][2]) - std::max(p[i][0], q[j][0]));
      const double h = std::max(0.0, std::min(p[i][3], q[j][3]) - std::max(p[i][1], q[j][1]));
      const double area_a = (p[i][2] - p[i][0]) * (p[i][3] - p[i][1]);
      const double area_b = (q[j][2] - q[j][0]) * (q[j][3] - q[j][1]);
      out[i][j] = w * h / (area_a + area_b - w * h);
    }
  }
  return iou;
}

at::Tensor random_boxes(int64_t n, int64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const at::Tensor xy = at::rand({n, 2}, gen) * 100;
  return at::cat({xy, xy + at::rand({n, 2}, gen) * 50 + 0.5}, 1);
}

TEST(BoxIou, MatchesPlainLoop) {
  at::set_num_threads(4);
  for (auto [n, m] : {std::pair<int64_t, int64_t>{1, 1}, {37, 5}, {3000, 40}}) {
    const at::Tensor a = random_boxes(n, n), b = random_boxes(m, 1000 + m);
    const at::Tensor iou = box_iou(a, b);
    ASSERT_EQ(iou.sizes(), at::IntArrayRef({n, m}));
    const double diff = max_abs_diff(iou, reference_iou(a, b));
    std::cout << "box_iou vs plain loop, " << n << "x" << m << ": max |diff| " << diff << "\n";
    EXPECT_LT(diff, 1e-6);
    EXPECT_TRUE(at::equal(box_iou(a.to(at::kDouble), b.to(at::kDouble)), reference_iou(a, b)));
  }
}

TEST(BoxIou, EmptySetsAndDegenerateBoxes) {
  EXPECT_EQ(box_iou(at::zeros({0, 4}), random_boxes(3, 1)).sizes(), at::IntArrayRef({0, 3}));
  EXPECT_EQ(box_iou(random_boxes(3, 1), at::zeros({0, 4})).sizes(), at::IntArrayRef({3, 0}));
  const at::Tensor point = at::tensor({2.f, 2.f, 2.f, 2.f}).view({1, 4});
  const at::Tensor box = at::tensor({0.f, 0.f, 4.f, 4.f}).view({1, 4});
  EXPECT_EQ(box_iou(point, box).item<float>(), 0.0f);
  EXPECT_TRUE(std::isnan(box_iou(point, point).item<float>()));  // 0 / 0, as torchvision
  EXPECT_EQ(box_iou(box, box).item<float>(), 1.0f);
}

TEST(BoxIou, RejectsBadInput) {
  EXPECT_THROW(box_iou(at::zeros({2, 3}), at::zeros({2, 4})), c10::Error);
  EXPECT_THROW(box_iou(at::zeros({2, 4}), at::zeros({2, 4}, at::kDouble)), c10::Error);
  EXPECT_THROW(box_iou(at::zeros({2, 4}, at::kLong), at::zeros({2, 4}, at::kLong)), c10::Error);
}

TEST(BoxIouParity, MatchesTorchvision) {
  DETKIT_REQUIRE_ORACLE();
  const at::Tensor a = random_boxes(200, 3), b = random_boxes(150, 4);
  const auto want = detkit::testing::run_oracle("oracle_ops.py", "box_iou", {{"a", a}, {"b", b}});
  const double diff = max_abs_diff(box_iou(a, b), want.at("iou"));
  std::cout << "box_iou vs torchvision, 200x150: max |diff| " << diff << "\n";
  EXPECT_LT(diff, 1e-5);
}

}  // namespace
}  // namespace detkit::ops
