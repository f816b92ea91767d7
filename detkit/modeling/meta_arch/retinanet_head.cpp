#include "detkit/modeling/meta_arch/retinanet_head.h"

#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>

#include <cmath>

#include "detkit/utils/error.h"

namespace detkit::modeling {
namespace {

layers::Conv2d conv3x3(int64_t in, int64_t out) {
  layers::Conv2d conv(layers::Conv2dOptions(in, out, 3).stride(1).padding(1));
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(conv->weight(), 0.0, 0.01);
  torch::nn::init::constant_(conv->bias(), 0.0);
  return conv;
}

}  // namespace

RetinaNetHeadImpl::RetinaNetHeadImpl(const RetinaNetHeadOptions& o) : options_(o) {
  if (o.num_convs() < 0) throw Error("MODEL.RETINANET.NUM_CONVS must be >= 0");
  if (o.prior_prob() <= 0 || o.prior_prob() >= 1)
    throw Error("MODEL.RETINANET.PRIOR_PROB must be in (0, 1), got " +
                std::to_string(o.prior_prob()));
  for (int64_t i = 0; i < o.num_convs(); ++i) {
    cls_subnet_->push_back(conv3x3(o.in_channels(), o.in_channels()));
    cls_subnet_->push_back(torch::nn::ReLU());
    bbox_subnet_->push_back(conv3x3(o.in_channels(), o.in_channels()));
    bbox_subnet_->push_back(torch::nn::ReLU());
  }
  register_module("cls_subnet", cls_subnet_);
  register_module("bbox_subnet", bbox_subnet_);
  cls_score_ =
      register_module("cls_score", conv3x3(o.in_channels(), o.num_anchors() * o.num_classes()));
  bbox_pred_ = register_module("bbox_pred", conv3x3(o.in_channels(), o.num_anchors() * 4));
  torch::NoGradGuard no_grad;
  cls_score_->bias().fill_(-std::log((1 - o.prior_prob()) / o.prior_prob()));
}

std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> RetinaNetHeadImpl::forward(
    const std::vector<at::Tensor>& features) {
  std::vector<at::Tensor> logits, deltas;
  for (const at::Tensor& x : features) {
    logits.push_back(cls_score_->forward(cls_subnet_->is_empty() ? x : cls_subnet_->forward(x)));
    deltas.push_back(bbox_pred_->forward(bbox_subnet_->is_empty() ? x : bbox_subnet_->forward(x)));
  }
  return {logits, deltas};
}

}  // namespace detkit::modeling
