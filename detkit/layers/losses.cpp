#include "detkit/layers/losses.h"

#include <ATen/ATen.h>

namespace detkit::layers {

at::Tensor smooth_l1_loss_sum(const at::Tensor& input, const at::Tensor& target, double beta) {
  at::Tensor n = (input - target).abs();
  if (beta < 1e-5) return n.sum();
  return at::where(n < beta, 0.5 * n * n / beta, n - 0.5 * beta).sum();
}

}  // namespace detkit::layers
