#include "detkit/solver/grad_clip.h"

#include <ATen/ATen.h>

#include <cmath>
#include <numeric>

#include "detkit/utils/error.h"

namespace detkit::solver {
namespace {

// torch.norm(t, p) with no dim: a p-norm over all dimensions.
at::Tensor full_norm(const at::Tensor& t, double p) {
  std::vector<int64_t> dims(t.dim());
  std::iota(dims.begin(), dims.end(), 0);
  return at::norm(t, p, dims, /*keepdim=*/false);
}

}  // namespace

GradientClipType parse_gradient_clip_type(const std::string& name) {
  if (name == "value") return GradientClipType::kValue;
  if (name == "norm") return GradientClipType::kNorm;
  throw Error("unknown SOLVER.CLIP_GRADIENTS.CLIP_TYPE '" + name + "'; valid: 'value', 'norm'");
}

void clip_grad_value_(const std::vector<at::Tensor>& params, double clip_value) {
  at::NoGradGuard no_grad;
  for (const at::Tensor& param : params) {
    const at::Tensor& grad = param.grad();
    if (grad.defined()) grad.clamp_(-clip_value, clip_value);
  }
}

at::Tensor clip_grad_norm_(const std::vector<at::Tensor>& params, double max_norm,
                           double norm_type) {
  at::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (const at::Tensor& param : params) {
    if (param.grad().defined()) grads.push_back(param.grad());
  }
  if (grads.empty()) return at::zeros({});
  at::Tensor total_norm;
  if (std::isinf(norm_type) && norm_type > 0) {
    std::vector<at::Tensor> norms;
    for (const at::Tensor& g : grads) norms.push_back(g.abs().max());
    total_norm = norms.size() == 1 ? norms[0] : at::stack(norms).max();
  } else {
    std::vector<at::Tensor> norms;
    for (const at::Tensor& g : grads) norms.push_back(full_norm(g, norm_type));
    total_norm = full_norm(at::stack(norms), norm_type);
  }
  // Python's `max_norm / t` is t.reciprocal() * max_norm: the same float32 operations here.
  const at::Tensor clip_coef = (total_norm + 1e-6).reciprocal() * max_norm;
  const at::Tensor clip_coef_clamped = at::clamp_max(clip_coef, 1.0);
  for (const at::Tensor& g : grads) g.mul_(clip_coef_clamped);
  return total_norm;
}

GradientClipper make_gradient_clipper(const GradientClipOptions& options) {
  if (options.type() == GradientClipType::kValue) {
    const double clip_value = options.clip_value();
    return [clip_value](const at::Tensor& param) { clip_grad_value_({param}, clip_value); };
  }
  const double max_norm = options.clip_value(), norm_type = options.norm_type();
  return [max_norm, norm_type](const at::Tensor& param) {
    clip_grad_norm_({param}, max_norm, norm_type);
  };
}

}  // namespace detkit::solver
