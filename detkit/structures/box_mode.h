#pragma once
// BoxMode: how 4 numbers describe a box. Detectron2's enum values, as datasets store them.
#include <ATen/core/Tensor.h>

#include <array>

namespace detkit::structures {

enum class BoxMode : int {
  XYXY_ABS = 0,  // x0, y0, x1, y1 in pixels (what models use)
  XYWH_ABS = 1,  // x0, y0, width, height in pixels (what COCO stores)
};

/// Converts (N, 4) boxes between modes; returns a new tensor (the input is untouched).
at::Tensor convert_box_mode(const at::Tensor& boxes, BoxMode from, BoxMode to);
std::array<double, 4> convert_box_mode(const std::array<double, 4>& box, BoxMode from, BoxMode to);

}  // namespace detkit::structures
