#include "detkit/modeling/backbone/resnet_blocks.h"

#include <ATen/ATen.h>

namespace detkit::modeling {

using layers::Conv2d;
using layers::Conv2dOptions;

namespace {
// A 1x1 projection when the block changes channels or resolution, else none.
Conv2d make_shortcut(torch::nn::Module& block, const BlockOptions& o) {
  if (o.in_channels == o.out_channels && o.stride == 1) return Conv2d(nullptr);
  Conv2d shortcut(
      Conv2dOptions(o.in_channels, o.out_channels, 1).stride(o.stride).bias(false).norm(o.norm));
  c2_msra_fill(shortcut);
  return block.register_module("shortcut", shortcut);
}
}  // namespace

BasicStemImpl::BasicStemImpl(int64_t in_channels, int64_t out_channels, const std::string& norm) {
  conv1_ = register_module("conv1", Conv2d(Conv2dOptions(in_channels, out_channels, 7)
                                               .stride(2)
                                               .padding(3)
                                               .bias(false)
                                               .norm(norm)
                                               .relu(true)));
  c2_msra_fill(conv1_);
}

at::Tensor BasicStemImpl::forward(const at::Tensor& x) {
  return at::max_pool2d(conv1_->forward(x), {3, 3}, {2, 2}, {1, 1});
}

BasicBlockImpl::BasicBlockImpl(const BlockOptions& o) {
  shortcut_ = make_shortcut(*this, o);
  conv1_ = register_module("conv1", Conv2d(Conv2dOptions(o.in_channels, o.out_channels, 3)
                                               .stride(o.stride)
                                               .padding(1)
                                               .bias(false)
                                               .norm(o.norm)
                                               .relu(true)));
  conv2_ = register_module(
      "conv2",
      Conv2d(Conv2dOptions(o.out_channels, o.out_channels, 3).padding(1).bias(false).norm(o.norm)));
  c2_msra_fill(conv1_);
  c2_msra_fill(conv2_);
}

at::Tensor BasicBlockImpl::forward(const at::Tensor& x) {
  at::Tensor out = conv2_->forward(conv1_->forward(x));
  out += shortcut_ ? shortcut_->forward(x) : x;
  return out.relu_();
}

BottleneckBlockImpl::BottleneckBlockImpl(const BlockOptions& o) {
  shortcut_ = make_shortcut(*this, o);
  // Detectron2's MSRA models stride in the 1x1; torchvision / Caffe2 ResNeXt in the 3x3.
  int64_t stride_1x1 = o.stride_in_1x1 ? o.stride : 1, stride_3x3 = o.stride_in_1x1 ? 1 : o.stride;
  conv1_ = register_module("conv1", Conv2d(Conv2dOptions(o.in_channels, o.bottleneck_channels, 1)
                                               .stride(stride_1x1)
                                               .bias(false)
                                               .norm(o.norm)
                                               .relu(true)));
  conv2_ =
      register_module("conv2", Conv2d(Conv2dOptions(o.bottleneck_channels, o.bottleneck_channels, 3)
                                          .stride(stride_3x3)
                                          .padding(o.dilation)
                                          .dilation(o.dilation)
                                          .groups(o.num_groups)
                                          .bias(false)
                                          .norm(o.norm)
                                          .relu(true)));
  conv3_ = register_module(
      "conv3",
      Conv2d(Conv2dOptions(o.bottleneck_channels, o.out_channels, 1).bias(false).norm(o.norm)));
  c2_msra_fill(conv1_);
  c2_msra_fill(conv2_);
  c2_msra_fill(conv3_);
}

at::Tensor BottleneckBlockImpl::forward(const at::Tensor& x) {
  at::Tensor out = conv2_->forward(conv1_->forward(x));  // each with its ReLU
  out = conv3_->forward(out);
  out += shortcut_ ? shortcut_->forward(x) : x;
  return out.relu_();
}

}  // namespace detkit::modeling
