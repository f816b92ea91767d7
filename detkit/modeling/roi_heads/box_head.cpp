#include "detkit/modeling/roi_heads/box_head.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>

#include "detkit/utils/error.h"

namespace detkit::modeling {

void c2_xavier_fill(torch::nn::Linear& fc) {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(fc->weight, 1.0);
  fc->bias.zero_();
}

FastRCNNConvFCHead::FastRCNNConvFCHead(const FastRCNNConvFCHeadOptions& o) {
  if (o.conv_dims.empty() && o.fc_dims.empty())
    throw Error("MODEL.ROI_BOX_HEAD: NUM_CONV and NUM_FC cannot both be 0");
  int64_t channels = o.input.channels;
  for (size_t k = 0; k < o.conv_dims.size(); ++k) {
    layers::Conv2d conv(layers::Conv2dOptions(channels, o.conv_dims[k], 3)
                            .padding(1)
                            .bias(o.norm.empty())
                            .norm(o.norm)
                            .relu(true));
    layers::c2_msra_fill(conv);
    convs_.push_back(register_module("conv" + std::to_string(k + 1), conv));
    channels = o.conv_dims[k];
  }
  output_size_ = channels * o.input.height * o.input.width;
  for (size_t k = 0; k < o.fc_dims.size(); ++k) {
    torch::nn::Linear fc(output_size_, o.fc_dims[k]);
    c2_xavier_fill(fc);
    fcs_.push_back(register_module("fc" + std::to_string(k + 1), fc));
    output_size_ = o.fc_dims[k];
  }
}

at::Tensor FastRCNNConvFCHead::forward(const at::Tensor& x) {
  at::Tensor y = x;
  for (auto& conv : convs_) y = conv->forward(y);
  if (fcs_.empty()) return y;
  y = y.flatten(1);
  for (auto& fc : fcs_) y = fc->forward(y).relu_();
  return y;
}

Registry<BoxHeadFactory>& box_head_registry() {
  static Registry<BoxHeadFactory> registry("box head (MODEL.ROI_BOX_HEAD.NAME)");
  return registry;
}

std::shared_ptr<BoxHead> build_box_head(const config::CfgNode& cfg, const BoxHeadInput& input) {
  return box_head_registry().get(cfg.get_string("MODEL.ROI_BOX_HEAD.NAME"))(cfg, input);
}

DETKIT_REGISTER_BOX_HEAD(FastRCNNConvFCHead,
                         [](const config::CfgNode& cfg, const BoxHeadInput& input) {
                           FastRCNNConvFCHeadOptions o;
                           o.input = input;
                           o.conv_dims.assign(cfg.get_int("MODEL.ROI_BOX_HEAD.NUM_CONV"),
                                              cfg.get_int("MODEL.ROI_BOX_HEAD.CONV_DIM"));
                           o.fc_dims.assign(cfg.get_int("MODEL.ROI_BOX_HEAD.NUM_FC"),
                                            cfg.get_int("MODEL.ROI_BOX_HEAD.FC_DIM"));
                           o.norm = cfg.get_string("MODEL.ROI_BOX_HEAD.NORM");
                           return std::make_shared<FastRCNNConvFCHead>(o);
                         });

}  // namespace detkit::modeling
