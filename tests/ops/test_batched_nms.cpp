// detkit::ops::batched_nms: both strategies against a plain per-category loop, edge cases, and
// parity with torchvision.ops.batched_nms (identical keep lists).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "detkit/ops/batched_nms.h"
#include "tests/ops/reference_nms.h"
#include "tests/parity/oracle.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::to_vector;

namespace detkit::ops {
namespace {

// Plain per-category greedy NMS; returns the kept indices in ascending order.
std::vector<int64_t> reference_kept(const at::Tensor& boxes, const at::Tensor& scores,
                                    const at::Tensor& idxs, double threshold) {
  std::vector<int64_t> all = testing::reference_nms(boxes, scores, threshold, idxs);
  std::sort(all.begin(), all.end());
  return all;
}

// n boxes on a quarter-pixel lattice (so category offsets shift them exactly), heavy overlap,
// scores rounded to 1/16 so many tie, categories in [0, categories).
struct Detections {
  at::Tensor boxes, scores, idxs;
};
Detections detections(int64_t n, int64_t categories, int64_t seed, bool lattice) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const at::Tensor centre = at::rand({n, 2}, gen) * 120;
  const at::Tensor wh = at::rand({n, 2}, gen) * 30 + 4;
  at::Tensor boxes = at::cat({centre - wh / 2, centre + wh / 2}, 1).contiguous();
  if (lattice) boxes = at::round(boxes * 4) / 4;
  return {boxes, at::round(at::rand({n}, gen) * 16) / 16, at::randint(categories, {n}, gen)};
}

void expect_sorted_by_score(const std::vector<int64_t>& keep, const at::Tensor& scores) {
  auto s = scores.accessor<float, 1>();
  for (size_t i = 1; i < keep.size(); ++i) EXPECT_GE(s[keep[i - 1]], s[keep[i]]) << i;
}

TEST(BatchedNms, BothStrategiesMatchPlainLoop) {
  at::set_num_threads(4);
  // 900 boxes = 3600 coordinates: one NMS on shifted boxes; 2500 boxes: NMS per category.
  for (int64_t n : {1, 40, 900, 2500}) {
    const Detections d = detections(n, 7, n, /*lattice=*/true);
    for (double threshold : {0.4, 0.6}) {
      std::vector<int64_t> keep = to_vector(batched_nms(d.boxes, d.scores, d.idxs, threshold));
      expect_sorted_by_score(keep, d.scores);
      std::sort(keep.begin(), keep.end());
      EXPECT_EQ(keep, reference_kept(d.boxes, d.scores, d.idxs, threshold)) << "n=" << n;
    }
  }
}

TEST(BatchedNms, CategoriesNeverSuppressEachOther) {
  const at::Tensor boxes = at::tensor({0.f, 0.f, 10.f, 10.f}).repeat({4, 1});
  const at::Tensor scores = at::tensor({0.5f, 0.9f, 0.7f, 0.8f});
  const at::Tensor idxs = at::tensor({0, 1, 0, 2}, at::kLong);
  EXPECT_EQ(to_vector(batched_nms(boxes, scores, idxs, 0.5)), (std::vector<int64_t>{1, 3, 2}));
}

TEST(BatchedNms, EmptyInputAndBadInput) {
  const at::Tensor keep =
      batched_nms(at::zeros({0, 4}), at::zeros({0}), at::zeros({0}, at::kLong), 0.5);
  EXPECT_EQ(keep.numel(), 0);
  EXPECT_EQ(keep.scalar_type(), at::kLong);
  EXPECT_THROW(batched_nms(at::zeros({2, 4}), at::zeros({2}), at::zeros({2}), 0.5), c10::Error);
  EXPECT_THROW(batched_nms(at::zeros({2, 4}), at::zeros({2}), at::zeros({3}, at::kLong), 0.5),
               c10::Error);
}

TEST(BatchedNmsParity, KeepListsMatchTorchvision) {
  DETKIT_REQUIRE_ORACLE();
  const double threshold = 0.5;
  const std::vector<int64_t> sizes = {0, 600, 2500};  // both of torchvision's strategies
  std::vector<Detections> cases;
  detkit::testing::TensorMap inputs{{"iou_threshold", at::tensor(threshold)}};
  for (int64_t n : sizes) {
    const std::string id = "#" + std::to_string(cases.size());
    cases.push_back(detections(n, 5, 200 + n, /*lattice=*/false));
    inputs["boxes" + id] = cases.back().boxes;
    inputs["scores" + id] = cases.back().scores;
    inputs["idxs" + id] = cases.back().idxs;
  }
  const auto want = detkit::testing::run_oracle("oracle_ops.py", "batched_nms", inputs);
  for (size_t k = 0; k < cases.size(); ++k) {
    const Detections& d = cases[k];
    const std::vector<int64_t> got = to_vector(batched_nms(d.boxes, d.scores, d.idxs, threshold));
    const std::vector<int64_t> expected = to_vector(want.at("keep#" + std::to_string(k)));
    std::cout << "batched_nms vs torchvision, n=" << sizes[k] << ": kept " << got.size()
              << ", identical=" << (got == expected) << "\n";
    EXPECT_EQ(got, expected) << "n=" << sizes[k];
  }
}

}  // namespace
}  // namespace detkit::ops
