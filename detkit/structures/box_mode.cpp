#include "detkit/structures/box_mode.h"

#include <ATen/ATen.h>

namespace detkit::structures {

at::Tensor convert_box_mode(const at::Tensor& boxes, BoxMode from, BoxMode to) {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, "boxes must be (N, 4), got ", boxes.sizes());
  at::Tensor out = boxes.clone();
  if (from == to) return out;
  if (from == BoxMode::XYWH_ABS && to == BoxMode::XYXY_ABS) {
    out.select(1, 2).add_(boxes.select(1, 0));
    out.select(1, 3).add_(boxes.select(1, 1));
  } else {
    out.select(1, 2).sub_(boxes.select(1, 0));
    out.select(1, 3).sub_(boxes.select(1, 1));
  }
  return out;
}

std::array<double, 4> convert_box_mode(const std::array<double, 4>& b, BoxMode from, BoxMode to) {
  if (from == to) return b;
  if (from == BoxMode::XYWH_ABS) return {b[0], b[1], b[0] + b[2], b[1] + b[3]};
  return {b[0], b[1], b[2] - b[0], b[3] - b[1]};
}

}  // namespace detkit::structures
