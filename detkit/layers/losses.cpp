#include "detkit/layers/losses.h"

#include <ATen/ATen.h>

namespace detkit::layers {

at::Tensor smooth_l1_loss_sum(const at::Tensor& input, const at::Tensor& target, double beta) {
  at::Tensor n = (input - target).abs();
  if (beta < 1e-5) return n.sum();
  return at::where(n < beta, 0.5 * n * n / beta, n - 0.5 * beta).sum();
}

at::Tensor giou_loss_sum(const at::Tensor& boxes, const at::Tensor& targets) {
  constexpr double eps = 1e-7;
  const auto b = boxes.unbind(-1), t = targets.unbind(-1);
  const at::Tensor xi1 = at::max(b[0], t[0]), yi1 = at::max(b[1], t[1]);
  const at::Tensor xi2 = at::min(b[2], t[2]), yi2 = at::min(b[3], t[3]);
  const at::Tensor overlap = (yi2 > yi1) & (xi2 > xi1);
  const at::Tensor intersection =
      at::where(overlap, (xi2 - xi1) * (yi2 - yi1), at::zeros_like(xi1));
  const at::Tensor unions =
      (b[2] - b[0]) * (b[3] - b[1]) + (t[2] - t[0]) * (t[3] - t[1]) - intersection;
  const at::Tensor iou = intersection / (unions + eps);
  const at::Tensor enclosing =
      (at::max(b[2], t[2]) - at::min(b[0], t[0])) * (at::max(b[3], t[3]) - at::min(b[1], t[1]));
  return (1 - (iou - (enclosing - unions) / (enclosing + eps))).sum();
}

at::Tensor sigmoid_focal_loss_sum(const at::Tensor& logits, const at::Tensor& targets, double alpha,
                                  double gamma) {
  const at::Tensor x = logits.to(at::kFloat), t = targets.to(at::kFloat);
  const at::Tensor p = at::sigmoid(x);
  const at::Tensor ce = at::binary_cross_entropy_with_logits(x, t, {}, {}, at::Reduction::None);
  const at::Tensor p_t = p * t + (1 - p) * (1 - t);
  at::Tensor loss = ce * (1 - p_t).pow(gamma);
  if (alpha >= 0) loss = (alpha * t + (1 - alpha) * (1 - t)) * loss;
  return loss.sum();
}

}  // namespace detkit::layers
