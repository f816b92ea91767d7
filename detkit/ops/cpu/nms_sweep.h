#pragma once
// NMS's suppression sweep, compiled apart from the kernel: vectorised, in AVX-512 / AVX2 /
// baseline clones picked at load time, and without floating-point contraction, so every IoU is
// exactly torchvision's scalar expression.
#include <cstdint>

namespace detkit::ops::cpu {

/// Boxes in score order as columns: box j is (x1[j], y1[j], x2[j], y2[j]), area[j] its area.
template <typename T>
struct SweepBoxes {
  const T* x1;
  const T* y1;
  const T* x2;
  const T* y2;
  const T* area;
};

/// suppressed[j] = 1 for every j in [begin, end) whose IoU with box i, computed as torchvision
/// does (inter / (area[i] + area[j] - inter)), is greater than `threshold`; other entries are left
/// as they are. The comparison is the double one torchvision makes (a float IoU against the
/// double threshold).
void suppress_overlaps(const SweepBoxes<float>& boxes, int64_t i, int64_t begin, int64_t end,
                       double threshold, uint8_t* suppressed);
void suppress_overlaps(const SweepBoxes<double>& boxes, int64_t i, int64_t begin, int64_t end,
                       double threshold, uint8_t* suppressed);

}  // namespace detkit::ops::cpu
