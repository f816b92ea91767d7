// detkit::ops::nms: the kernel against a plain greedy loop, edge cases, parity with
// torchvision.ops.nms (identical keep lists, ties included).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>

#include "detkit/ops/nms.h"
#include "tests/ops/reference_nms.h"
#include "tests/parity/oracle.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::to_vector;

namespace detkit::ops {
namespace {

using testing::reference_nms;

// n boxes around `clusters` centres (heavy overlap), scores rounded to 1/16 so many tie.
std::pair<at::Tensor, at::Tensor> clustered_boxes(int64_t n, int64_t clusters, int64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const at::Tensor centre_of = at::randint(clusters, {n}, gen);
  const at::Tensor centres = at::rand({clusters, 2}, gen) * 500;
  const at::Tensor xy = centres.index_select(0, centre_of) + at::randn({n, 2}, gen) * 6;
  const at::Tensor wh = at::rand({n, 2}, gen) * 40 + 8;
  const at::Tensor boxes = at::cat({xy - wh / 2, xy + wh / 2}, 1);
  const at::Tensor scores = at::round(at::rand({n}, gen) * 16) / 16;
  return {boxes.contiguous(), scores};
}

TEST(Nms, MatchesPlainLoop) {
  at::set_num_threads(4);
  for (int64_t n : {1, 7, 300, 2000}) {
    const auto [boxes, scores] = clustered_boxes(n, std::max<int64_t>(1, n / 20), n);
    for (double threshold : {0.3, 0.5, 0.7}) {
      EXPECT_EQ(to_vector(nms(boxes, scores, threshold)), reference_nms(boxes, scores, threshold))
          << "n=" << n << " threshold=" << threshold;
    }
  }
}

TEST(Nms, LongSweepsSplitAcrossThreadsGiveTheSameKeepList) {
  // More boxes than the sweep grain, so each suppression sweep runs on several threads.
  const auto [boxes, scores] = clustered_boxes(20000, 60, 5);
  const std::vector<int64_t> expected = reference_nms(boxes, scores, 0.5);
  at::set_num_threads(1);
  EXPECT_EQ(to_vector(nms(boxes, scores, 0.5)), expected);
  at::set_num_threads(4);
  EXPECT_EQ(to_vector(nms(boxes, scores, 0.5)), expected);
}

TEST(Nms, EmptyInputGivesEmptyInt64) {
  const at::Tensor keep = nms(at::zeros({0, 4}), at::zeros({0}), 0.5);
  EXPECT_EQ(keep.numel(), 0);
  EXPECT_EQ(keep.scalar_type(), at::kLong);
}

TEST(Nms, TiesKeepTheLowerIndexAndThresholdIsStrict) {
  // Identical boxes with equal scores: only the first survives.
  const at::Tensor same = at::tensor({0.f, 0.f, 4.f, 4.f}).repeat({5, 1});
  EXPECT_EQ(to_vector(nms(same, at::ones({5}), 0.5)), std::vector<int64_t>{0});
  // IoU exactly 0.5 is not > 0.5: both kept, best first.
  const at::Tensor pair = at::tensor({0.f, 0.f, 2.f, 1.f, 1.f, 0.f, 2.f, 1.f}).view({2, 4});
  const at::Tensor scores = at::tensor({0.2f, 0.9f});
  EXPECT_EQ(to_vector(nms(pair, scores, 0.5)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(to_vector(nms(pair, scores, 0.49)), std::vector<int64_t>{1});
}

TEST(Nms, AFloatIouIsComparedWithTheDoubleThresholdAsTorchvisionDoes) {
  // IoU 10 / 100 is the float nearest 0.1, which is above the double 0.1: suppressed at 0.1, as
  // torchvision's (float > double) comparison decides, though it equals float(0.1).
  const at::Tensor pair = at::tensor({0.f, 0.f, 10.f, 10.f, 0.f, 0.f, 1.f, 10.f}).view({2, 4});
  const at::Tensor scores = at::tensor({0.9f, 0.2f});
  ASSERT_GT(static_cast<double>(10.f / 100.f), 0.1);
  EXPECT_EQ(to_vector(nms(pair, scores, 0.1)), std::vector<int64_t>{0});
  EXPECT_EQ(to_vector(nms(pair, scores, static_cast<double>(10.f / 100.f))),
            (std::vector<int64_t>{0, 1}));
  // In double the same boxes compare in double.
  EXPECT_EQ(to_vector(nms(pair.to(at::kDouble), scores.to(at::kDouble), 0.1)),
            (std::vector<int64_t>{0, 1}));
}

TEST(Nms, RejectsBadInput) {
  EXPECT_THROW(nms(at::zeros({3, 5}), at::zeros({3}), 0.5), c10::Error);
  EXPECT_THROW(nms(at::zeros({3, 4}), at::zeros({2}), 0.5), c10::Error);
  EXPECT_THROW(nms(at::zeros({3, 4}), at::zeros({3}, at::kDouble), 0.5), c10::Error);
}

TEST(NmsParity, KeepListsMatchTorchvision) {
  DETKIT_REQUIRE_ORACLE();
  struct Case {
    at::Tensor boxes, scores;
    double threshold;
  };
  std::vector<Case> cases;
  detkit::testing::TensorMap inputs;
  for (int64_t n : {0, 50, 1500}) {
    const auto [boxes, scores] = clustered_boxes(n, std::max<int64_t>(1, n / 15), 100 + n);
    for (double threshold : {0.3, 0.7}) {
      const std::string id = "#" + std::to_string(cases.size());
      inputs["boxes" + id] = boxes;
      inputs["scores" + id] = scores;
      inputs["iou_threshold" + id] = at::tensor(threshold);
      cases.push_back({boxes, scores, threshold});
    }
  }
  const auto want = detkit::testing::run_oracle("oracle_ops.py", "nms", inputs);
  for (size_t k = 0; k < cases.size(); ++k) {
    const Case& c = cases[k];
    const std::vector<int64_t> got = to_vector(nms(c.boxes, c.scores, c.threshold));
    const std::vector<int64_t> expected = to_vector(want.at("keep#" + std::to_string(k)));
    std::cout << "nms vs torchvision, n=" << c.boxes.size(0) << " threshold=" << c.threshold
              << ": kept " << got.size() << ", identical=" << (got == expected) << "\n";
    EXPECT_EQ(got, expected) << "n=" << c.boxes.size(0) << " threshold=" << c.threshold;
  }
}

}  // namespace
}  // namespace detkit::ops
