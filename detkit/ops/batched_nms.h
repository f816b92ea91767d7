#pragma once
// Per-category non-maximum suppression with the semantics of torchvision.ops.batched_nms.
#include <ATen/core/Tensor.h>

namespace detkit::ops {

/// NMS (see nms.h) applied to each category separately: boxes whose idxs differ never suppress
/// each other.
/// boxes: (N, 4) float or double, (x1, y1, x2, y2). scores: (N), boxes' dtype.
/// idxs: (N) integer category of each box.
/// Returns int64 (K) indices of the kept boxes, by decreasing score.
at::Tensor batched_nms(const at::Tensor& boxes, const at::Tensor& scores, const at::Tensor& idxs,
                       double iou_threshold);

}  // namespace detkit::ops
