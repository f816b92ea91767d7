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

// A bottleneck's strides: Detectron2's MSRA models stride in the 1x1, torchvision / Caffe2
// ResNeXt in the 3x3.
int64_t stride_1x1(const BlockOptions& o) { return o.stride_in_1x1 ? o.stride : 1; }
int64_t stride_3x3(const BlockOptions& o) { return o.stride_in_1x1 ? 1 : o.stride; }

// A bottleneck's 1x1 reduction ("conv1", norm and ReLU) and 1x1 expansion ("conv3", norm); the
// block MSRA-fills its convolutions once all are made, in the order the random draws had so far.
Conv2d make_conv1(torch::nn::Module& block, const BlockOptions& o) {
  return block.register_module("conv1",
                               Conv2d(Conv2dOptions(o.in_channels, o.bottleneck_channels, 1)
                                          .stride(stride_1x1(o))
                                          .bias(false)
                                          .norm(o.norm)
                                          .relu(true)));
}
Conv2d make_conv3(torch::nn::Module& block, const BlockOptions& o) {
  return block.register_module(
      "conv3",
      Conv2d(Conv2dOptions(o.bottleneck_channels, o.out_channels, 1).bias(false).norm(o.norm)));
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
  conv1_ = make_conv1(*this, o);
  conv2_ =
      register_module("conv2", Conv2d(Conv2dOptions(o.bottleneck_channels, o.bottleneck_channels, 3)
                                          .stride(stride_3x3(o))
                                          .padding(o.dilation)
                                          .dilation(o.dilation)
                                          .groups(o.num_groups)
                                          .bias(false)
                                          .norm(o.norm)
                                          .relu(true)));
  conv3_ = make_conv3(*this, o);
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

DeformBottleneckBlockImpl::DeformBottleneckBlockImpl(const BlockOptions& o)
    : modulated_(o.deform_modulated), offset_channels_(18 * o.deform_num_groups) {
  shortcut_ = make_shortcut(*this, o);
  conv1_ = make_conv1(*this, o);
  const int64_t offset_outputs = (o.deform_modulated ? 27 : 18) * o.deform_num_groups;
  conv2_offset_ =
      register_module("conv2_offset", Conv2d(Conv2dOptions(o.bottleneck_channels, offset_outputs, 3)
                                                 .stride(stride_3x3(o))
                                                 .padding(o.dilation)
                                                 .dilation(o.dilation)));
  conv2_ = register_module(
      "conv2", layers::DeformConv2d(
                   layers::DeformConv2dOptions(o.bottleneck_channels, o.bottleneck_channels, 3)
                       .stride(stride_3x3(o))
                       .padding(o.dilation)
                       .dilation(o.dilation)
                       .groups(o.num_groups)
                       .deformable_groups(o.deform_num_groups)
                       .modulated(o.deform_modulated)
                       .norm(o.norm)
                       .relu(true)));
  conv3_ = make_conv3(*this, o);
  c2_msra_fill(conv1_);
  layers::c2_msra_fill(conv2_);
  c2_msra_fill(conv3_);
  torch::NoGradGuard no_grad;  // offsets start at 0 (and masks at 0.5): a plain 3x3 at first
  conv2_offset_->weight().zero_();
  conv2_offset_->bias().zero_();
}

at::Tensor DeformBottleneckBlockImpl::forward(const at::Tensor& x) {
  at::Tensor out = conv1_->forward(x);
  const at::Tensor offset_mask = conv2_offset_->forward(out);
  if (modulated_) {
    // Detectron2 chunks the 27 * groups channels in three and concatenates the first two back:
    // the offsets are the first 18 * groups channels as they are.
    out = conv2_->forward(out, offset_mask.narrow(1, 0, offset_channels_),
                          offset_mask.narrow(1, offset_channels_, offset_channels_ / 2).sigmoid());
  } else {
    out = conv2_->forward(out, offset_mask);
  }
  out = conv3_->forward(out);
  out += shortcut_ ? shortcut_->forward(x) : x;
  return out.relu_();
}

}  // namespace detkit::modeling
