#pragma once
// Gradient clipping as Detectron2's SOLVER.CLIP_GRADIENTS: each parameter's gradient is clipped
// on its own (Detectron2's per-parameter clipper), by value or by norm, with the exact tensor
// arithmetic of torch.nn.utils.clip_grad_value_ / clip_grad_norm_ (PyTorch 1.13).
#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <functional>
#include <string>
#include <vector>

namespace detkit::solver {

enum class GradientClipType { kValue, kNorm };

/// "value" or "norm"; anything else is a detkit::Error naming SOLVER.CLIP_GRADIENTS.CLIP_TYPE.
GradientClipType parse_gradient_clip_type(const std::string& name);

struct GradientClipOptions {
  TORCH_ARG(GradientClipType, type) = GradientClipType::kValue;
  TORCH_ARG(double, clip_value) = 1.0;  // max |g| ("value") or max norm ("norm")
  TORCH_ARG(double, norm_type) = 2.0;   // p of the L-p norm; infinity for the max norm
};

/// Clamps every element of each parameter's gradient to [-clip_value, clip_value], in place.
/// Parameters without a gradient are skipped.
void clip_grad_value_(const std::vector<at::Tensor>& params, double clip_value);

/// Scales the gradients of `params` in place by min(1, max_norm / (total_norm + 1e-6)), where
/// total_norm is the norm_type-norm of all their gradients together. Returns total_norm (a 0-dim
/// tensor; 0 when no parameter has a gradient).
at::Tensor clip_grad_norm_(const std::vector<at::Tensor>& params, double max_norm,
                           double norm_type = 2.0);

/// Clips one parameter's gradient; the optimizer calls it on every parameter before each step.
using GradientClipper = std::function<void(const at::Tensor& param)>;

GradientClipper make_gradient_clipper(const GradientClipOptions& options);

}  // namespace detkit::solver
