#pragma once
// Identity forward, gradient multiplied by `scale` backward (Detectron2's _ScaleGradient): what
// Cascade R-CNN puts on the pooled features of each stage (1 / number of stages).
#include <ATen/core/Tensor.h>

namespace detkit::layers {

at::Tensor scale_gradient(const at::Tensor& x, double scale);

}  // namespace detkit::layers
