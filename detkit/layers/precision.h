#pragma once
// Under autocast the heads' logits come out in bfloat16 (8 bits of mantissa: scores in steps of
// 1/256 near 1, ties everywhere). Probabilities are taken from them in fp32, as CUDA autocast's
// softmax rule does for Detectron2's AMP; other dtypes pass through unchanged.
#include <ATen/ATen.h>

namespace detkit::layers {

inline at::Tensor fp32_if_reduced(const at::Tensor& t) {
  const auto dtype = t.scalar_type();
  return dtype == at::kBFloat16 || dtype == at::kHalf ? t.to(at::kFloat) : t;
}

}  // namespace detkit::layers
