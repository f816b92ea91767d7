#pragma once
// Losses shared by the heads, with Detectron2's (fvcore's) definitions.
#include <ATen/core/Tensor.h>

namespace detkit::layers {

/// Smooth L1 summed over all elements: 0.5 x^2 / beta for |x| < beta, |x| - 0.5 beta otherwise;
/// plain L1 when beta < 1e-5 (Detectron2's default beta 0).
at::Tensor smooth_l1_loss_sum(const at::Tensor& input, const at::Tensor& target, double beta);

}  // namespace detkit::layers
