#pragma once
// The arithmetic of detkit's CUDA NMS and box IoU (cuda/nms_kernel.cu), for host and device: the
// IoU of two boxes, the 64-bit suppression words one thread computes, and the
// host's sweep over them. Compiled by the host compiler too, so the whole algorithm is checked
// against the CPU kernel without a GPU (tests/ops/test_cuda_math.cpp). The IoU is the CPU
// kernel's expression (cpu/nms_sweep.cpp), compared with the threshold as a double as it does.
#include <cstdint>
#include <vector>

#include "detkit/ops/cuda/host_device.h"

namespace detkit::ops::cuda_math {

constexpr int kNmsBlock = 64;  // boxes per suppression word

template <typename T>
DETKIT_HOST_DEVICE inline T nms_max(T a, T b) {
  return a > b ? a : b;
}
template <typename T>
DETKIT_HOST_DEVICE inline T nms_min(T a, T b) {
  return a < b ? a : b;
}

/// The IoU of boxes a and b (x1, y1, x2, y2): the CPU kernels' expression (box_iou, nms).
template <typename T>
DETKIT_HOST_DEVICE inline T box_pair_iou(const T* a, const T* b) {
  const T area_a = (a[2] - a[0]) * (a[3] - a[1]);
  const T area_b = (b[2] - b[0]) * (b[3] - b[1]);
  const T w = nms_max(T(0), nms_min(a[2], b[2]) - nms_max(a[0], b[0]));
  const T h = nms_max(T(0), nms_min(a[3], b[3]) - nms_max(a[1], b[1]));
  const T inter = w * h;
  return inter / (area_a + area_b - inter);
}

/// Whether box b overlaps box a by more than `threshold` IoU.
template <typename T>
DETKIT_HOST_DEVICE inline bool overlaps(const T* a, const T* b, double threshold) {
  return static_cast<double>(box_pair_iou(a, b)) > threshold;
}

/// Word `block` of row i: bit j set when box block*64 + j comes after box i in score order and
/// overlaps it by more than the threshold. boxes: (n, 4) in score order.
template <typename T>
DETKIT_HOST_DEVICE inline uint64_t suppression_word(const T* boxes, int64_t n, int64_t i,
                                                    int64_t block, double threshold) {
  uint64_t bits = 0;
  const int64_t begin = block * kNmsBlock;
  for (int64_t j = 0; j < kNmsBlock && begin + j < n; ++j) {
    const int64_t other = begin + j;
    if (other > i && overlaps(boxes + 4 * i, boxes + 4 * other, threshold)) {
      bits |= uint64_t{1} << j;
    }
  }
  return bits;
}

/// The kept positions (in score order) from the suppression words, (n, ceil(n / 64)) row-major:
/// each box not suppressed by a kept box before it is kept, as the CPU kernel's sweep.
inline std::vector<int64_t> sweep_words(const uint64_t* words, int64_t n) {
  const int64_t blocks = (n + kNmsBlock - 1) / kNmsBlock;
  std::vector<uint64_t> removed(blocks, 0);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i) {
    if (removed[i / kNmsBlock] >> (i % kNmsBlock) & 1) continue;
    keep.push_back(i);
    const uint64_t* row = words + i * blocks;
    for (int64_t b = i / kNmsBlock; b < blocks; ++b) removed[b] |= row[b];
  }
  return keep;
}

}  // namespace detkit::ops::cuda_math
