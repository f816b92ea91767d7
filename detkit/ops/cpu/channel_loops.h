#pragma once
// The per-channel inner loops of roi_align's channels-innermost kernels, compiled apart from the
// kernels: vectorised, in AVX-512 / AVX2 / baseline clones picked at load time for the CPU, and
// without floating-point contraction, so every element gets exactly the scalar expression
// (no FMA), in the same order.
#include <cstdint>

namespace detkit::ops::cpu {

/// sum[c] += w1 * v1[c] + w2 * v2[c] + w3 * v3[c] + w4 * v4[c], for c < n.
void add_bilinear(float* sum, const float* v1, const float* v2, const float* v3, const float* v4,
                  float w1, float w2, float w3, float w4, int64_t n);
void add_bilinear(double* sum, const double* v1, const double* v2, const double* v3,
                  const double* v4, double w1, double w2, double w3, double w4, int64_t n);

/// dst[j * dst_ld + i] = src[i * src_ld + j] for i < rows, j < cols: a rows x cols block of a
/// row-major matrix, transposed in square tiles (the (C, H*W) <-> (H*W, C) changes of layout around
/// the kernels; a strided at::Tensor::copy_ took 3-13x longer).
void transpose(const float* src, int64_t src_ld, float* dst, int64_t dst_ld, int64_t rows,
               int64_t cols);
void transpose(const double* src, int64_t src_ld, double* dst, int64_t dst_ld, int64_t rows,
               int64_t cols);

/// target[c] += grad[c] * w / count, for c < n.
void add_weighted(float* target, const float* grad, float w, float count, int64_t n);
void add_weighted(double* target, const double* grad, double w, double count, int64_t n);

}  // namespace detkit::ops::cpu
