// CPU kernel of detkit::nms. Same visiting order (stable sort by decreasing score) and the same
// IoU arithmetic as torchvision, so keep lists are identical. Boxes are gathered in score order so
// the suppression sweep reads memory sequentially and vectorises (cpu/nms_sweep.cpp); a long sweep
// is split across threads (each thread marks only its own range of boxes).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "detkit/ops/checks.h"
#include "detkit/ops/cpu/nms_sweep.h"

namespace detkit::ops {
namespace {

// Below this many remaining boxes a sweep runs on one thread (a fork/join costs more).
constexpr int64_t kSweepGrain = 8192;

template <typename T>
at::Tensor nms_impl(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  const int64_t n = boxes.size(0);
  const at::Tensor order =
      std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  const at::Tensor sorted = boxes.index_select(0, order).contiguous();
  const T* b = sorted.data_ptr<T>();
  const int64_t* original = order.data_ptr<int64_t>();
  // Coordinates and areas in score order: x1[i] belongs to the i-th best box.
  std::vector<T> x1(n), y1(n), x2(n), y2(n), area(n);
  for (int64_t i = 0; i < n; ++i) {
    x1[i] = b[4 * i];
    y1[i] = b[4 * i + 1];
    x2[i] = b[4 * i + 2];
    y2[i] = b[4 * i + 3];
    area[i] = (x2[i] - x1[i]) * (y2[i] - y1[i]);
  }
  std::vector<uint8_t> suppressed(n, 0);
  std::vector<int64_t> keep;
  const cpu::SweepBoxes<T> columns{x1.data(), y1.data(), x2.data(), y2.data(), area.data()};
  for (int64_t i = 0; i < n; ++i) {
    if (suppressed[i]) continue;
    keep.push_back(original[i]);
    at::parallel_for(i + 1, n, kSweepGrain, [&](int64_t begin, int64_t end) {
      cpu::suppress_overlaps(columns, i, begin, end, iou_threshold, suppressed.data());
    });
  }
  return at::tensor(keep, boxes.options().dtype(at::kLong));
}

at::Tensor nms_kernel(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  check_nms_arguments(boxes, scores);
  if (boxes.size(0) == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  at::Tensor keep;
  AT_DISPATCH_FLOATING_TYPES(boxes.scalar_type(), "nms",
                             [&] { keep = nms_impl<scalar_t>(boxes, scores, iou_threshold); });
  return keep;
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CPU, m) { m.impl("nms", TORCH_FN(nms_kernel)); }

}  // namespace detkit::ops
