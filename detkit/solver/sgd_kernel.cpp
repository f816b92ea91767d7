#include "detkit/solver/sgd_kernel.h"

#include <ATen/Parallel.h>

#include <cmath>

namespace detkit::solver {
namespace {

// Vectorised clones picked at load time; std::fma is one instruction in the first two (AVX-512F
// has its own FMA; Haswell is AVX2 + FMA) and libm's correctly rounded fma in the baseline.
__attribute__((target_clones("avx512f", "arch=haswell", "default"))) void update_range(
    float* __restrict param, const float* __restrict grad, float* __restrict buffer, int64_t n,
    SgdCoefficients c) {
  const bool decay = c.weight_decay != 0;
  if (c.momentum == 0) {
    for (int64_t i = 0; i < n; ++i) {
      const float d = decay ? std::fma(param[i], c.weight_decay, grad[i]) : grad[i];
      param[i] = std::fma(d, c.minus_lr, param[i]);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const float d = decay ? std::fma(param[i], c.weight_decay, grad[i]) : grad[i];
    const float b = std::fma(d, c.one_minus_dampening, buffer[i] * c.momentum);
    buffer[i] = b;
    const float step = c.nesterov ? std::fma(b, c.momentum, d) : b;
    param[i] = std::fma(step, c.minus_lr, param[i]);
  }
}

}  // namespace

void sgd_update(float* param, const float* grad, float* buffer, int64_t n,
                const SgdCoefficients& c) {
  constexpr int64_t kGrain = 32768;  // below this, one thread: the team costs more than it saves
  at::parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    update_range(param + begin, grad + begin, buffer == nullptr ? nullptr : buffer + begin,
                 end - begin, c);
  });
}

}  // namespace detkit::solver
