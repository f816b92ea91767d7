#pragma once
// Pairwise intersection over union of two box sets, with the semantics of torchvision.ops.box_iou.
#include <ATen/core/Tensor.h>

namespace detkit::ops {

/// a: (N, 4), b: (M, 4), both float or the same floating dtype, (x1, y1, x2, y2).
/// Returns (N, M): iou[i][j] = intersection / union of a[i] and b[j]. As in torchvision, two
/// zero-area boxes give 0 / 0 = NaN (Detectron2's pairwise_iou gives 0 there). No gradient.
at::Tensor box_iou(const at::Tensor& a, const at::Tensor& b);

}  // namespace detkit::ops
