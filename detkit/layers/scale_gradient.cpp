#include "detkit/layers/scale_gradient.h"

#include <torch/autograd.h>

namespace detkit::layers {
namespace {

struct ScaleGradient : public torch::autograd::Function<ScaleGradient> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x,
                            double scale) {
    ctx->saved_data["scale"] = scale;
    return x.clone();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    return {grad[0] * ctx->saved_data["scale"].toDouble(), at::Tensor()};
  }
};

}  // namespace

at::Tensor scale_gradient(const at::Tensor& x, double scale) {
  return ScaleGradient::apply(x, scale);
}

}  // namespace detkit::layers
