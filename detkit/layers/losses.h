#pragma once
// Losses shared by the heads, with Detectron2's (fvcore's) definitions.
#include <ATen/core/Tensor.h>

#include <string>

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

/// Distance IoU loss (Detectron2's diou_loss) summed over boxes: 1 - IoU + d^2 / (c^2 + eps), d
/// the distance between the boxes' centres, c the enclosing box's diagonal, eps 1e-7. A box with
/// x1 > x2 or y1 > y2 is refused, as Detectron2 asserts.
at::Tensor diou_loss_sum(const at::Tensor& boxes, const at::Tensor& targets);

/// Complete IoU loss (Detectron2's ciou_loss) summed over boxes: the DIoU loss + alpha v, with
/// v = 4 / pi^2 (atan(w_t / h_t) - atan(w / h))^2 and alpha = v / (1 - IoU + v + eps) held
/// constant (no gradient through alpha).
at::Tensor ciou_loss_sum(const at::Tensor& boxes, const at::Tensor& targets);

/// Box-regression loss types of Detectron2's BBOX_REG_LOSS_TYPE keys.
bool is_box_reg_loss_type(const std::string& type);  // smooth_l1, giou, diou or ciou
/// The loss of an IoU type ("giou", "diou", "ciou") on decoded boxes, summed.
at::Tensor iou_box_reg_loss_sum(const std::string& type, const at::Tensor& boxes,
                                const at::Tensor& targets);

at::Tensor sigmoid_focal_loss_sum(const at::Tensor& logits, const at::Tensor& targets, double alpha,
                                  double gamma);

}  // namespace detkit::layers
