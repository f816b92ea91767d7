#pragma once
// SGD's update of one float32 parameter in one pass over memory: the element-wise arithmetic of
// torch.optim.SGD's single-tensor path (four ATen ops, each a pass that reads and writes the
// parameter's size: 48 ms of a Mask R-CNN R50 step's 44 M parameters on 2 cores), with the same
// roundings: every `a + alpha * b` ATen computes as one fused multiply-add, and so does this.
#include <cstdint>

namespace detkit::solver {

struct SgdCoefficients {
  float weight_decay = 0;         // 0: the gradient is used as is
  float momentum = 0;             // 0: no momentum buffer (`buffer` is not read or written)
  float one_minus_dampening = 1;  // 1 - dampening, rounded from double as ATen does
  float minus_lr = 0;             // -lr
  bool nesterov = false;
};

/// For i < n:
///   d = weight_decay != 0 ? fma(param, weight_decay, grad) : grad
///   buffer = fma(d, one_minus_dampening, buffer * momentum)                   (momentum != 0)
///   d = nesterov ? fma(buffer, momentum, d) : buffer                           (momentum != 0)
///   param = fma(d, minus_lr, param)
/// Runs on libtorch's threads; `buffer` may be null when momentum is 0. The first step, which
/// starts the buffer as d, is SGD's op-by-op path.
void sgd_update(float* param, const float* grad, float* buffer, int64_t n,
                const SgdCoefficients& c);

}  // namespace detkit::solver
