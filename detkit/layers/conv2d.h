#pragma once
// Conv2d with an optional norm and ReLU, as Detectron2's layers.Conv2d: the convolution's
// parameters are "weight"/"bias" and the norm is the child "norm", so state-dict names read
// "res2.0.conv1.weight", "res2.0.conv1.norm.running_mean".
#include <torch/nn/module.h>
#include <torch/nn/modules/container/any.h>
#include <torch/nn/pimpl.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace detkit::layers {

struct Conv2dOptions {
  Conv2dOptions(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}
  TORCH_ARG(int64_t, in_channels);
  TORCH_ARG(int64_t, out_channels);
  TORCH_ARG(int64_t, kernel_size);
  TORCH_ARG(int64_t, stride) = 1;
  TORCH_ARG(int64_t, padding) = 0;
  TORCH_ARG(int64_t, dilation) = 1;
  TORCH_ARG(int64_t, groups) = 1;
  TORCH_ARG(bool, bias) = true;
  TORCH_ARG(std::string, norm) = "";  // see make_norm()
  TORCH_ARG(bool, relu) = false;      // ReLU after the norm
};

class Conv2dImpl : public torch::nn::Module {
 public:
  explicit Conv2dImpl(const Conv2dOptions& options);
  /// x: (N, C, H, W), in either memory format; at::conv2d, then the norm and the ReLU. Without
  /// gradients (inference), a norm that is a per-channel affine map (FrozenBN, BN in eval) is
  /// folded into the convolution's weight and bias, which are kept while the tensors they come
  /// from are unchanged.
  at::Tensor forward(const at::Tensor& x);

  const Conv2dOptions& options() const { return options_; }
  /// The data of the weight with the norm folded in that forward keeps (nullptr while there is
  /// none): how a FLOP counter charges the convolution to this module.
  const void* folded_weight_data() const {
    std::lock_guard<std::mutex> lock(folded_mutex_);
    return folded_.weight.defined() ? folded_.weight.data_ptr() : nullptr;
  }
  at::Tensor& weight() { return weight_; }
  at::Tensor& bias() { return bias_; }

 private:
  /// The weight and bias with this norm folded in (is_channel_affine), in the weight's dtype;
  /// remade when any tensor behind them (weight, bias, the norm's parameters and buffers) was
  /// replaced, given new data (set_data, which keeps the version) or changed in place.
  std::pair<at::Tensor, at::Tensor> weight_and_bias_with_norm();

  Conv2dOptions options_;
  at::Tensor weight_, bias_;
  torch::nn::AnyModule norm_;
  struct Source {  // tensor and storage held, so that neither address can be reused meanwhile
    at::Tensor tensor;
    c10::Storage storage;
    const void* data;
    int64_t version;
    bool same_as(const at::Tensor& t) const;
  };
  struct Folded {
    std::vector<Source> sources;
    at::Tensor weight, bias;
  } folded_;
  mutable std::mutex folded_mutex_;  // threads running inference on one model share the folded weights
};
TORCH_MODULE(Conv2d);

/// How the process runs its convolutions (the config's CONV_ALGORITHM, a detkit key, set by
/// modeling::build_model as Detectron2's default_setup sets torch.backends.cudnn.benchmark from
/// CUDNN_BENCHMARK):
/// - kAuto ("auto", the default): transposed convolutions (layers/conv_transpose2d.h) whose stride
///   equals their kernel (the mask head's upsampling) run as one matrix product, their gradients
///   as two (ops/patchwise_conv_transpose2d.h); every other convolution runs libtorch's kernels
///   (at::conv2d, at::conv_transpose2d). In eval mode a ResNet with a BatchNorm-family norm keeps
///   its maps channels-last (modeling/backbone/resnet.h).
/// - kDirect ("direct"): libtorch's kernels for every convolution, and a ResNet's maps NCHW in
///   every mode, as PyTorch runs them.
/// Conv2d runs at::conv2d under either.
enum class ConvAlgorithm { kAuto, kDirect };
void set_conv_algorithm(ConvAlgorithm algorithm);
ConvAlgorithm conv_algorithm();
/// One line for the log: which kernels the convolutions run under `algorithm`.
std::string conv_algorithm_report(ConvAlgorithm algorithm);
/// "auto" or "direct"; anything else is a detkit::Error naming CONV_ALGORITHM and both values.
ConvAlgorithm parse_conv_algorithm(const std::string& value);

/// Caffe2's "MSRA" fill (Detectron2's c2_msra_fill): kaiming normal, fan_out, ReLU gain; bias 0.
void c2_msra_fill(Conv2d& conv);
/// Caffe2's "Xavier" fill (Detectron2's c2_xavier_fill): kaiming uniform with a = 1; bias 0.
void c2_xavier_fill(Conv2d& conv);

}  // namespace detkit::layers
