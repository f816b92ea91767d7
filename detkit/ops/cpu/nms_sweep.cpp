#include "detkit/ops/cpu/nms_sweep.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "detkit/ops/cpu/clones.h"

namespace detkit::ops::cpu {

namespace {

// Branch-free, so the loop vectorises: a box already suppressed is compared again and stays
// suppressed, which changes nothing.
template <typename T>
inline void sweep(const SweepBoxes<T>& b, int64_t i, int64_t begin, int64_t end, T threshold,
                  uint8_t* __restrict suppressed) {
  const T x1 = b.x1[i], y1 = b.y1[i], x2 = b.x2[i], y2 = b.y2[i], area = b.area[i];
  const T* __restrict bx1 = b.x1;
  const T* __restrict by1 = b.y1;
  const T* __restrict bx2 = b.x2;
  const T* __restrict by2 = b.y2;
  const T* __restrict barea = b.area;
  for (int64_t j = begin; j < end; ++j) {
    const T w = std::max(T(0), std::min(x2, bx2[j]) - std::max(x1, bx1[j]));
    const T h = std::max(T(0), std::min(y2, by2[j]) - std::max(y1, by1[j]));
    const T inter = w * h;
    const T iou = inter / (area + barea[j] - inter);
    suppressed[j] |= static_cast<uint8_t>(iou > threshold);
  }
}

// The largest float f0 with f0 <= threshold: for every float f, f > threshold (compared as
// doubles) exactly when f > f0.
float float_threshold(double threshold) {
  float t = static_cast<float>(threshold);
  if (static_cast<double>(t) > threshold)
    t = std::nextafter(t, -std::numeric_limits<float>::infinity());
  return t;
}

}  // namespace

DETKIT_CLONES void suppress_overlaps(const SweepBoxes<float>& boxes, int64_t i, int64_t begin,
                                     int64_t end, double threshold, uint8_t* suppressed) {
  sweep(boxes, i, begin, end, float_threshold(threshold), suppressed);
}

DETKIT_CLONES void suppress_overlaps(const SweepBoxes<double>& boxes, int64_t i, int64_t begin,
                                     int64_t end, double threshold, uint8_t* suppressed) {
  sweep(boxes, i, begin, end, threshold, suppressed);
}

}  // namespace detkit::ops::cpu
