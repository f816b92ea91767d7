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
#include "tests/parity/oracle.h"

namespace detkit::ops {
namespace {

std::vector<int64_t> to_vector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

// Plain per-category greedy NMS; returns the kept indices in ascending order.
std::vector<int64_t> reference_kept(const at::Tensor& boxes, const at::Tensor& scores,
                                    const at::Tensor& idxs, double threshold) {
  auto b = boxes.accessor<float, 2>();
  auto s = scores.accessor<float, 1>();
  auto c = idxs.accessor<int64_t, 1>();
  std::vector<int64_t> order(boxes.size(0));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return s[i] > s[j]; });
  auto iou = [&](int64_t i, int64_t j) {
    const float w = std::max(0.0f, std::min(b[i][2], b[j][2]) - std::max(b[i][0], b[j][0]));
    const float h = std::max(0.0f, std::min(b[i][3], b[j][3]) - std::max(b[i][1], b[j][1]));
    const float area_i = (b[i][2] - b[i][0]) * (b[i][3] - b[i][1]);
    const float area_j = (b[j][2] - b[j][0]) * (b[j][3] - b[j][1]);
    return w * h / (area_i + area_j - w * h);
  };
  std::map<int64_t, std::vector<int64_t>> kept_by_category;
  for (int64_t i : order) {
    std::vector<int64_t>& kept = kept_by_category[c[i]];
    bool suppressed = false;
    for (int64_t k : kept) suppressed = suppressed || iou(k, i) > threshold;
    if (!suppressed) kept.push_back(i);
  }
  std::vector<int64_t> all;
  for (const auto& [category, kept] : kept_by_category)
    all.insert(all.end(), kept.begin(), kept.end());
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
