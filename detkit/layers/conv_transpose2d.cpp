#include "detkit/layers/conv_transpose2d.h"

#include <ATen/core/grad_mode.h>

#include "detkit/layers/conv2d.h"
#include "detkit/ops/onednn_conv_transpose2d.h"
#include "detkit/ops/patchwise_conv_transpose2d.h"

namespace detkit::layers {

at::Tensor conv_transpose2d(torch::nn::ConvTranspose2d& deconv, const at::Tensor& x) {
  const auto& o = deconv->options;
  const auto& padding = c10::get<torch::ExpandingArray<2>>(o.padding());
  if (conv_algorithm() != ConvAlgorithm::kAuto) return deconv->forward(x);
  if (ops::patchwise_conv_transpose2d_applies(x, deconv->weight, deconv->bias, *o.stride(),
                                              *padding, *o.output_padding(), *o.dilation(),
                                              o.groups()))
    return ops::patchwise_conv_transpose2d(x, deconv->weight, deconv->bias);
  const bool gradients =
      at::GradMode::is_enabled() && (x.requires_grad() || deconv->weight.requires_grad());
  if (gradients &&
      ops::onednn_conv_transpose2d_applies(x, deconv->weight, deconv->bias, *o.stride(), *padding,
                                           *o.output_padding(), *o.dilation(), o.groups()))
    return ops::onednn_conv_transpose2d(x, deconv->weight, deconv->bias, o.stride()->at(0),
                                        padding->at(0));
  return deconv->forward(x);
}

}  // namespace detkit::layers
