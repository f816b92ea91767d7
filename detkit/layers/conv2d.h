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
  /// x: an (N, C, H, W) map, or a blocked one (ops/blocked_maps.h; one group, a norm with
  /// norm_has_blocked_form), which gives a blocked result. Without gradients (inference), a norm
  /// that is a per-channel affine map (FrozenBN, BN in eval) is folded into the convolution's
  /// weight and bias, which are kept while the tensors they come from are unchanged.
  at::Tensor forward(const at::Tensor& x);
  /// A blocked result from a blocked x, or from a plain (N, C, H, W) float32 one (a network's
  /// first convolution, on its images; any C): one group, a norm with norm_has_blocked_form.
  at::Tensor forward_blocked(const at::Tensor& x);
  /// forward_blocked in two halves: the convolution alone, then its norm and ReLU.
  at::Tensor convolve_blocked(const at::Tensor& x);
  at::Tensor normalize_blocked(const at::Tensor& convolved);
  /// next.convolve_blocked(normalize_blocked(convolved)): a chain of convolutions on blocked maps
  /// (a ResNet block's). Where this norm is a BatchNorm on its batch's statistics followed by the
  /// ReLU, the pair runs as ops::blocked_batch_norm_relu_conv2d: the normalized map between them
  /// is not kept for the backward pass but remade there.
  at::Tensor normalize_then_convolve_blocked(const at::Tensor& convolved, Conv2dImpl& next);
  /// next.normalize_blocked(normalize_then_convolve_blocked(convolved, next)). Where both norms
  /// are BatchNorms on their batch's statistics, this one followed by the ReLU and next's by none,
  /// the three run as ops::blocked_batch_norm_relu_conv2d_batch_norm: next's convolution's output
  /// is not kept for the backward pass either.
  at::Tensor normalize_then_forward_blocked(const at::Tensor& convolved, Conv2dImpl& next);

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
  /// Whether this norm and ReLU on `convolved`, then next's convolution, can run with the
  /// normalized map remade in backward.
  bool remakes_before(const at::Tensor& convolved, const Conv2dImpl& next);

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

/// How every Conv2d runs its convolution, for the whole process (the config's CONV_ALGORITHM, a
/// detkit key, set by modeling::build_model as Detectron2's default_setup sets
/// torch.backends.cudnn.benchmark from CUDNN_BENCHMARK):
/// - kAuto ("auto", the default): a float32 3x3 stride-1 convolution on a large enough map runs
///   oneDNN's Winograd kernels where the CPU has them (ops/winograd_conv2d.h); every other
///   convolution, and all of them on CPUs without AVX-512, runs at::conv2d. In training, a ResNet
///   with BN or FrozenBN (and an FPN on it) keeps its maps in oneDNN's blocked layout and runs
///   its convolutions and BatchNorms there (ResNet::blocked_maps, ops/blocked_maps.h). Transposed
///   convolutions (layers/conv_transpose2d.h) whose stride equals their kernel run as one matrix
///   product, their gradients as two (ops/patchwise_conv_transpose2d.h); the others run their
///   gradients on oneDNN's deconvolution kernels where it has JIT ones for the shape
///   (ops/onednn_conv_transpose2d.h), at::conv_transpose2d elsewhere.
/// - kDirect ("direct"): at::conv2d and at::conv_transpose2d everywhere, libtorch's (and
///   PyTorch's) own kernels.
enum class ConvAlgorithm { kAuto, kDirect };
void set_conv_algorithm(ConvAlgorithm algorithm);
ConvAlgorithm conv_algorithm();
/// One line for the log: which kernels the convolutions run on this CPU under `algorithm`.
std::string conv_algorithm_report(ConvAlgorithm algorithm);
/// "auto" or "direct"; anything else is a detkit::Error naming CONV_ALGORITHM and both values.
ConvAlgorithm parse_conv_algorithm(const std::string& value);

/// Caffe2's "MSRA" fill (Detectron2's c2_msra_fill): kaiming normal, fan_out, ReLU gain; bias 0.
void c2_msra_fill(Conv2d& conv);
/// Caffe2's "Xavier" fill (Detectron2's c2_xavier_fill): kaiming uniform with a = 1; bias 0.
void c2_xavier_fill(Conv2d& conv);

}  // namespace detkit::layers
