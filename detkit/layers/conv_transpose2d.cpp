#include "detkit/layers/conv_transpose2d.h"

#include <variant>

#include "detkit/layers/conv2d.h"
#include "detkit/ops/patchwise_conv_transpose2d.h"

namespace detkit::layers {

at::Tensor conv_transpose2d(torch::nn::ConvTranspose2d& deconv, const at::Tensor& x) {
  const auto& o = deconv->options;
  const auto& padding = std::get<torch::ExpandingArray<2>>(o.padding());
  if (conv_algorithm() == ConvAlgorithm::kAuto &&
      ops::patchwise_conv_transpose2d_applies(x, deconv->weight, deconv->bias, *o.stride(),
                                              *padding, *o.output_padding(), *o.dilation(),
                                              o.groups()))
    return ops::patchwise_conv_transpose2d(x, deconv->weight, deconv->bias);
  return deconv->forward(x);
}

}  // namespace detkit::layers
