#pragma once
#include <ATen/core/Tensor.h>

namespace detkit::ops::cpu {

/// A convolution's gradients with respect to its input, weight and bias.
struct ConvGrads {
  at::Tensor input, weight, bias;  // undefined where not asked for
};

}  // namespace detkit::ops::cpu
