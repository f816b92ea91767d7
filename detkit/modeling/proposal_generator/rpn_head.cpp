#include "detkit/modeling/proposal_generator/rpn_head.h"

#include <ATen/ATen.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/container/sequential.h>

#include "detkit/utils/error.h"

namespace detkit::modeling {

using layers::Conv2d;
using layers::Conv2dOptions;

namespace {
void normal_init(Conv2d& conv) {
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(conv->weight(), 0.0, 0.01);
  torch::nn::init::constant_(conv->bias(), 0.0);
}
}  // namespace

StandardRPNHeadImpl::StandardRPNHeadImpl(const StandardRPNHeadOptions& o) {
  int64_t channels = o.in_channels();
  std::vector<int64_t> dims = o.conv_dims();
  if (dims.empty()) throw Error("MODEL.RPN.CONV_DIMS must not be empty");
  for (size_t k = 0; k < dims.size(); ++k) {
    int64_t out = dims[k] == -1 ? o.in_channels() : dims[k];
    if (out <= 0) throw Error("MODEL.RPN.CONV_DIMS: conv widths must be positive or -1");
    convs_.emplace_back(Conv2dOptions(channels, out, 3).padding(1).relu(true));
    normal_init(convs_.back());
    channels = out;
  }
  if (convs_.size() == 1) {
    register_module("conv", convs_[0]);
  } else {
    auto seq = std::make_shared<torch::nn::Module>();
    for (size_t k = 0; k < convs_.size(); ++k)
      seq->register_module("conv" + std::to_string(k), convs_[k]);
    register_module("conv", seq);
  }
  objectness_logits_ = register_module("objectness_logits", Conv2d(Conv2dOptions(channels, o.num_anchors(), 1)));
  anchor_deltas_ = register_module(
      "anchor_deltas", Conv2d(Conv2dOptions(channels, o.num_anchors() * o.box_dim(), 1)));
  normal_init(objectness_logits_);
  normal_init(anchor_deltas_);
}

std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> StandardRPNHeadImpl::forward(
    const std::vector<at::Tensor>& features) {
  std::vector<at::Tensor> logits, deltas;
  for (const auto& x : features) {
    at::Tensor t = x;
    for (auto& conv : convs_) t = conv->forward(t);
    logits.push_back(objectness_logits_->forward(t));
    deltas.push_back(anchor_deltas_->forward(t));
  }
  return {logits, deltas};
}

Registry<RPNHeadFactory>& rpn_head_registry() {
  static Registry<RPNHeadFactory> registry("RPN head (MODEL.RPN.HEAD_NAME)");
  return registry;
}

std::shared_ptr<RPNHead> build_rpn_head(const config::CfgNode& cfg, int64_t in_channels,
                                        int64_t num_anchors, int64_t box_dim) {
  return rpn_head_registry().get(cfg.get_string("MODEL.RPN.HEAD_NAME"))(cfg, in_channels,
                                                                        num_anchors, box_dim);
}

DETKIT_REGISTER_RPN_HEAD(StandardRPNHead, [](const config::CfgNode& cfg, int64_t in_channels,
                                             int64_t num_anchors, int64_t box_dim) {
  return std::make_shared<StandardRPNHeadImpl>(StandardRPNHeadOptions(in_channels, num_anchors)
                                                   .box_dim(box_dim)
                                                   .conv_dims(cfg.get_int_list("MODEL.RPN.CONV_DIMS")));
});

}  // namespace detkit::modeling
