#pragma once
// Plain greedy NMS for checking the kernels: visit boxes by decreasing score (ties: lower index
// first) and keep one unless a kept box of the same category overlaps it with IoU > threshold.
#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <vector>

namespace detkit::ops::testing {

/// Kept indices in visiting order. `idxs` (N) int64 categories; undefined: one category.
inline std::vector<int64_t> reference_nms(const at::Tensor& boxes, const at::Tensor& scores,
                                          double threshold, const at::Tensor& idxs = {}) {
  auto b = boxes.accessor<float, 2>();
  auto s = scores.accessor<float, 1>();
  const at::Tensor categories = idxs.defined() ? idxs : at::zeros({boxes.size(0)}, at::kLong);
  auto c = categories.accessor<int64_t, 1>();
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
  std::vector<int64_t> keep;
  for (int64_t i : order) {
    bool suppressed = false;
    for (int64_t k : keep) suppressed = suppressed || (c[k] == c[i] && iou(k, i) > threshold);
    if (!suppressed) keep.push_back(i);
  }
  return keep;
}

}  // namespace detkit::ops::testing
