#pragma once
// Greedy non-maximum suppression with the semantics of torchvision.ops.nms.
#include <ATen/core/Tensor.h>

namespace detkit::ops {

/// Visits boxes by decreasing score (equal scores: lower index first) and discards every box whose
/// IoU with an already kept box is > iou_threshold.
/// boxes: (N, 4) float or double, (x1, y1, x2, y2). scores: (N), boxes' dtype.
/// Returns int64 (K) indices of the kept boxes, by decreasing score.
at::Tensor nms(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold);

}  // namespace detkit::ops
