#include "detkit/ops/cpu/channel_loops.h"

namespace detkit::ops::cpu {

#define DETKIT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

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

}  // namespace

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
