#pragma once
// Losses shared by the heads, with Detectron2's (fvcore's) definitions.
#include <ATen/core/Tensor.h>

namespace detkit::layers {

/// Smooth L1 summed over all elements: 0.5 x^2 / beta for |x| < beta, |x| - 0.5 beta otherwise;
/// plain L1 when beta < 1e-5 (Detectron2's default beta 0).
at::Tensor smooth_l1_loss_sum(const at::Tensor& input, const at::Tensor& target, double beta);

/// Sigmoid focal loss (Lin et al., fvcore's sigmoid_focal_loss) summed over all elements:
/// BCE-with-logits(x, t) * (1 - p_t)^gamma, times alpha_t = alpha t + (1 - alpha)(1 - t) when
/// alpha >= 0, where p = sigmoid(x) and p_t = p t + (1 - p)(1 - t). Computed in float32.
/// Generalized IoU loss (fvcore's giou_loss) summed over boxes: 1 - (IoU - (C - U) / C) for
/// (R, 4) XYXY boxes and targets, with C the smallest enclosing box's area and eps 1e-7.
at::Tensor giou_loss_sum(const at::Tensor& boxes, const at::Tensor& targets);

at::Tensor sigmoid_focal_loss_sum(const at::Tensor& logits, const at::Tensor& targets, double alpha,
                                  double gamma);

}  // namespace detkit::layers
