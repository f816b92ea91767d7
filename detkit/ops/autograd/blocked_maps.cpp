// The blocked-map ops and their autograd: layout changes, convolutions and BatchNorm on oneDNN's
// kernels in nChw16c (ops/cpu/blocked_*_kernel.h).
#include "detkit/ops/blocked_maps.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>

#include <cmath>
#include <utility>

#include "detkit/ops/cpu/blocked_affine_kernel.h"
#include "detkit/ops/cpu/blocked_batch_norm_kernel.h"
#include "detkit/ops/cpu/blocked_conv2d_kernel.h"
#include "detkit/ops/cpu/blocked_group_norm_kernel.h"
#include "detkit/ops/cpu/blocked_max_pool2d_kernel.h"
#include "detkit/ops/cpu/onednn_execution.h"
#include "detkit/ops/winograd_conv2d.h"

namespace detkit::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using tag = dnnl::memory::format_tag;

dnnl::memory::dims logical_dims(const at::Tensor& blocked) {
  return {blocked.size(0), blocked.size(1) * 16, blocked.size(2), blocked.size(3)};
}

// A (N, C, H, W) map stored channels-last is reordered from there; any other through its
// contiguous NCHW form.
at::Tensor plain_to_blocked(const at::Tensor& x) {
  at::Tensor out = at::empty({x.size(0), x.size(1) / 16, x.size(2), x.size(3), 16}, x.options());
  if (!x.is_contiguous() && x.is_contiguous(at::MemoryFormat::ChannelsLast)) {
    cpu::reorder_between(x, tag::nhwc, out, tag::nChw16c, logical_dims(out));
  } else {
    cpu::reorder_between(x.contiguous(), tag::nchw, out, tag::nChw16c, logical_dims(out));
  }
  return out;
}

at::Tensor blocked_to_plain(const at::Tensor& x, at::MemoryFormat format) {
  const at::Tensor blocked = x.contiguous();
  at::Tensor out = at::empty({x.size(0), x.size(1) * 16, x.size(2), x.size(3)},
                             x.options().memory_format(format));
  cpu::reorder_between(blocked, tag::nChw16c, out,
                       format == at::MemoryFormat::ChannelsLast ? tag::nhwc : tag::nchw,
                       logical_dims(blocked));
  return out;
}

class ToBlocked : public torch::autograd::Function<ToBlocked> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& x) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return plain_to_blocked(x);
  }
  static variable_list backward(AutogradContext*, const variable_list& grad) {
    return {blocked_to_plain(grad[0], at::MemoryFormat::Contiguous)};
  }
};

class FromBlocked : public torch::autograd::Function<FromBlocked> {
 public:
  static at::Tensor forward(AutogradContext*, const at::Tensor& x, bool channels_last) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return blocked_to_plain(
        x, channels_last ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
  }
  static variable_list backward(AutogradContext*, const variable_list& grad) {
    return {plain_to_blocked(grad[0]), at::Tensor()};
  }
};

void save_geometry(AutogradContext* ctx, const cpu::ConvGeometry& g, bool with_bias) {
  ctx->saved_data["with_bias"] = with_bias;
  ctx->saved_data["stride"] = g.stride;
  ctx->saved_data["padding"] = g.padding;
  ctx->saved_data["dilation"] = g.dilation;
  ctx->saved_data["winograd"] = g.winograd;
}

cpu::ConvGeometry geometry_from(AutogradContext* ctx) {
  return {ctx->saved_data["stride"].toInt(), ctx->saved_data["padding"].toInt(),
          ctx->saved_data["dilation"].toInt(), ctx->saved_data["winograd"].toBool()};
}

class BlockedConv2dFunction : public torch::autograd::Function<BlockedConv2dFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias, const cpu::ConvGeometry& g) {
    const bool with_bias = bias.numel() > 0;  // (0) stands for no bias: apply() needs a tensor
    save_geometry(ctx, g, with_bias);
    ctx->save_for_backward({input, weight});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return cpu::blocked_conv2d_forward(input, weight, with_bias ? bias : at::Tensor(), g);
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const auto saved = ctx->get_saved_variables();
    const bool with_bias = ctx->saved_data["with_bias"].toBool();
    auto grads = cpu::blocked_conv2d_backward(grad_output[0], saved[0], saved[1], with_bias,
                                              geometry_from(ctx),
                                              {ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                                               with_bias && ctx->needs_input_grad(2)});
    return {grads.input, grads.weight, grads.bias, at::Tensor()};
  }
};

class BlockedBatchNormFunction : public torch::autograd::Function<BlockedBatchNormFunction> {
 public:
  // -> {y, mean, biased variance}; the statistics are not differentiable outputs.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                               const at::Tensor& bias, double eps, bool relu) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    cpu::BatchStatistics stats;
    at::Tensor y = cpu::blocked_batch_norm_forward(x, weight, bias, eps, relu, stats);
    ctx->saved_data["eps"] = eps;
    if (relu) ctx->saved_data["relu_mask"] = stats.relu_mask;
    ctx->save_for_backward({x, weight, bias, stats.mean, stats.variance});
    ctx->mark_non_differentiable({stats.mean, stats.variance});
    return {y, stats.mean, stats.variance};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const auto saved = ctx->get_saved_variables();
    const auto mask = ctx->saved_data.find("relu_mask");
    auto grads = cpu::blocked_batch_norm_backward(
        grad_output[0], saved[0], saved[1], saved[2],
        {saved[3], saved[4],
         mask == ctx->saved_data.end() ? at::Tensor() : mask->second.toTensor()},
        ctx->saved_data["eps"].toDouble());
    return {grads[0], grads[1], grads[2], at::Tensor(), at::Tensor()};
  }
};

// blocked_conv2d of input = relu(BatchNorm(x)) with the batch's statistics, keeping for backward
// what remakes the input (x, the norm's weight and bias, the statistics: all kept by the
// BatchNorm anyway) instead of the input. Differentiable in input, weight and bias; the others
// are how to remake it.
class RemadeInputConv2dFunction : public torch::autograd::Function<RemadeInputConv2dFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& x,
                            const at::Tensor& norm_weight, const at::Tensor& norm_bias,
                            const at::Tensor& mean, const at::Tensor& variance, double eps,
                            const at::Tensor& weight, const at::Tensor& bias,
                            const cpu::ConvGeometry& g) {
    const bool with_bias = bias.numel() > 0;
    save_geometry(ctx, g, with_bias);
    ctx->saved_data["eps"] = eps;
    ctx->save_for_backward({x, norm_weight, norm_bias, mean, variance, weight});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return cpu::blocked_conv2d_forward(input, weight, with_bias ? bias : at::Tensor(), g);
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor input = cpu::blocked_batch_norm_remake(
        saved[0], saved[1], saved[2], {saved[3], saved[4], at::Tensor()},
        ctx->saved_data["eps"].toDouble(), /*relu=*/true);
    const bool with_bias = ctx->saved_data["with_bias"].toBool();
    auto grads =
        cpu::blocked_conv2d_backward(grad_output[0], input, saved[5], with_bias, geometry_from(ctx),
                                     // (indices among the tensor arguments)
                                     {ctx->needs_input_grad(0), ctx->needs_input_grad(6),
                                      with_bias && ctx->needs_input_grad(7)});
    const at::Tensor none;
    return {grads.input, none, none, none, none, none, none, grads.weight, grads.bias, none};
  }
};

// blocked_batch_norm(blocked_conv2d(input = relu(BatchNorm(x))), relu = false) with the batch's
// statistics in both: a bottleneck's last convolution and its BatchNorm, keeping for backward what
// remakes the input (as RemadeInputConv2dFunction) and the convolution's weight instead of the
// input and the convolution's output; both are remade there, the convolution run again.
// -> {y, mean, biased variance} of the second BatchNorm; differentiable in input, weight, bias,
// out_weight and out_bias.
class RemadeConv2dBatchNormFunction
    : public torch::autograd::Function<RemadeConv2dBatchNormFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& input, const at::Tensor& x,
                               const at::Tensor& norm_weight, const at::Tensor& norm_bias,
                               const at::Tensor& mean, const at::Tensor& variance, double eps,
                               const at::Tensor& weight, const at::Tensor& bias,
                               const cpu::ConvGeometry& g, const at::Tensor& out_weight,
                               const at::Tensor& out_bias, double out_eps) {
    const bool with_bias = bias.numel() > 0;
    save_geometry(ctx, g, with_bias);
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["out_eps"] = out_eps;
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    cpu::BatchStatistics stats;
    const at::Tensor y = cpu::blocked_batch_norm_forward(
        cpu::blocked_conv2d_forward(input, weight, with_bias ? bias : at::Tensor(), g), out_weight,
        out_bias, out_eps, /*relu=*/false, stats);
    ctx->save_for_backward({x, norm_weight, norm_bias, mean, variance, weight, bias, out_weight,
                            out_bias, stats.mean, stats.variance});
    ctx->mark_non_differentiable({stats.mean, stats.variance});
    return {y, stats.mean, stats.variance};
  }

  static variable_list backward(AutogradContext* ctx, const variable_list& grad_output) {
    const auto saved = ctx->get_saved_variables();
    const bool with_bias = ctx->saved_data["with_bias"].toBool();
    const cpu::ConvGeometry g = geometry_from(ctx);
    const at::Tensor input = cpu::blocked_batch_norm_remake(
        saved[0], saved[1], saved[2], {saved[3], saved[4], at::Tensor()},
        ctx->saved_data["eps"].toDouble(), /*relu=*/true);
    at::Tensor convolved =
        cpu::blocked_conv2d_forward(input, saved[5], with_bias ? saved[6] : at::Tensor(), g);
    const auto norm = cpu::blocked_batch_norm_backward(
        grad_output[0], convolved, saved[7], saved[8], {saved[9], saved[10], at::Tensor()},
        ctx->saved_data["out_eps"].toDouble());
    convolved = at::Tensor();
    // (indices among the tensor arguments)
    auto conv = cpu::blocked_conv2d_backward(norm[0], input, saved[5], with_bias, g,
                                             {ctx->needs_input_grad(0), ctx->needs_input_grad(6),
                                              with_bias && ctx->needs_input_grad(7)});
    const at::Tensor none;
    return {conv.input,  none,      none, none,    none,    none, none,
            conv.weight, conv.bias, none, norm[1], norm[2], none};
  }
};

class BlockedMaxPool2dFunction : public torch::autograd::Function<BlockedMaxPool2dFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t kernel,
                            int64_t stride, int64_t padding) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    at::Tensor workspace;
    at::Tensor y = cpu::blocked_max_pool2d_forward(x, {kernel, stride, padding}, workspace);
    // The input's sizes and where each maximum was, not the input itself.
    ctx->saved_data["sizes"] =
        std::vector<int64_t>{x.size(0), x.size(1) * 16, x.size(2), x.size(3)};
    ctx->saved_data["window"] = std::vector<int64_t>{kernel, stride, padding};
    ctx->saved_data["workspace"] = workspace;
    return y;
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grad) {
    const std::vector<int64_t> w = ctx->saved_data["window"].toIntVector();
    return {cpu::blocked_max_pool2d_backward(grad[0], ctx->saved_data["sizes"].toIntVector(),
                                             {w[0], w[1], w[2]},
                                             ctx->saved_data["workspace"].toTensor()),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// Differentiable in x only: scale and shift are constants here (FrozenBN's buffers).
class BlockedAffineFunction : public torch::autograd::Function<BlockedAffineFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& scale,
                            const at::Tensor& shift, bool relu) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    at::Tensor y = cpu::blocked_affine_forward(x, scale, shift, relu);
    ctx->saved_data["relu"] = relu;
    ctx->saved_data["scale"] = scale;
    if (relu) ctx->save_for_backward({y});  // where the ReLU let the gradient through
    return y;
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grad) {
    const bool relu = ctx->saved_data["relu"].toBool();
    const at::Tensor y = relu ? ctx->get_saved_variables()[0] : at::Tensor();
    return {cpu::blocked_affine_backward(grad[0], y, ctx->saved_data["scale"].toTensor(), relu),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// weight and bias: empty (0 values) where the GroupNorm has no affine map.
class BlockedGroupNormFunction : public torch::autograd::Function<BlockedGroupNormFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, int64_t groups, double eps, bool relu) {
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    const bool affine = weight.numel() > 0;
    cpu::GroupStatistics stats;
    at::Tensor y = cpu::blocked_group_norm_forward(x, groups, affine ? weight : at::Tensor(),
                                                   affine ? bias : at::Tensor(), eps, relu, stats);
    ctx->saved_data["groups"] = groups;
    ctx->saved_data["relu"] = relu;
    ctx->save_for_backward({x, relu ? y : at::empty({0}), weight, stats.mean, stats.rstd});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, const variable_list& grad) {
    const auto saved = ctx->get_saved_variables();
    const bool affine = saved[2].numel() > 0;
    const auto grads = cpu::blocked_group_norm_backward(
        grad[0], saved[0], saved[1], ctx->saved_data["groups"].toInt(),
        affine ? saved[2] : at::Tensor(), {saved[3], saved[4]}, ctx->saved_data["relu"].toBool());
    return {grads[0], grads[1], grads[2], at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

void check_blocked(const at::Tensor& x, const char* op) {
  TORCH_CHECK(is_blocked(x), "detkit ", op, ": needs a blocked map (float32 (N, C/16, H, W, 16), ",
              "contiguous; ops::to_blocked makes one), got ", x.sizes(), " ", x.scalar_type());
}

// A convolution's geometry, Winograd where it applies.
cpu::ConvGeometry geometry_of(const at::Tensor& input, const at::Tensor& weight, int64_t stride,
                              int64_t padding, int64_t dilation) {
  const bool winograd = weight.dim() == 4 && winograd_conv2d_available() &&
                        winograd_geometry(weight.size(2), weight.size(3), stride, padding, dilation,
                                          1, input.size(0), input.size(2), input.size(3));
  return {stride, padding, dilation, winograd};
}

// Profiles and analysis::FlopCounter see a blocked convolution under this name, with its
// geometry.
#define RECORD_BLOCKED_CONV2D(input, weight, stride, padding, dilation) \
  RECORD_FUNCTION("detkit::blocked_conv2d",                             \
                  std::vector<c10::IValue>({input, weight, stride, padding, dilation}))

// A blocked or plain input (checked by the caller) -> a blocked output.
at::Tensor conv2d_giving_blocked(const at::Tensor& input, const at::Tensor& weight,
                                 const at::Tensor& bias, int64_t stride, int64_t padding,
                                 int64_t dilation) {
  RECORD_BLOCKED_CONV2D(input, weight, stride, padding, dilation);
  return BlockedConv2dFunction::apply(input, weight, bias.defined() ? bias : at::empty({0}),
                                      geometry_of(input, weight, stride, padding, dilation));
}

// A BatchNorm's weight and bias, ones and zeros where it has no affine part.
std::pair<at::Tensor, at::Tensor> affine_or_identity(const at::Tensor& weight,
                                                     const at::Tensor& bias, int64_t channels,
                                                     const at::TensorOptions& options) {
  return {weight.defined() ? weight : at::ones({channels}, options),
          bias.defined() ? bias : at::zeros({channels}, options)};
}

// libtorch's update of the running statistics from a batch's (biased variance) over x's map.
void update_running_statistics(const at::Tensor& running_mean, const at::Tensor& running_var,
                               double momentum, const at::Tensor& mean, const at::Tensor& variance,
                               const at::Tensor& x) {
  if (!running_mean.defined() || !running_var.defined()) return;
  at::NoGradGuard no_grad;
  const int64_t n = x.numel() / (x.size(1) * 16);
  const double unbiased = n > 1 ? double(n) / double(n - 1) : 1.0;
  running_mean.mul_(1 - momentum).add_(mean, momentum);
  running_var.mul_(1 - momentum).add_(variance, momentum * unbiased);
}

// Training BatchNorm of a blocked map: its output and what remakes it.
struct Normalized {
  at::Tensor y, x, weight, bias, mean, variance;
  bool remakeable;  // false where a non-finite statistic made the ReLU run apart
};

Normalized batch_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                      const at::Tensor& running_mean, const at::Tensor& running_var,
                      double momentum, double eps, bool relu) {
  check_blocked(x, "blocked_batch_norm");
  const auto [w, b] = affine_or_identity(weight, bias, x.size(1) * 16, x.options());
  auto outputs = BlockedBatchNormFunction::apply(x, w, b, eps, relu);
  bool remakeable = true;
  // oneDNN's fused ReLU turns NaN into 0, libtorch's keeps it. A NaN or an infinity in the map
  // (a diverged step) makes its channel's statistics non-finite: then the ReLU runs apart, so the
  // NaN reaches the loss, which stops training, as it would in libtorch.
  if (relu && !at::isfinite(at::cat({outputs[1], outputs[2]})).all().item<bool>()) {
    outputs = BlockedBatchNormFunction::apply(x, w, b, eps, false);
    outputs[0] = at::relu(outputs[0]);
    remakeable = false;
  }
  update_running_statistics(running_mean, running_var, momentum, outputs[1], outputs[2], x);
  return {outputs[0], x, w, b, outputs[1], outputs[2], remakeable};
}

}  // namespace

bool blocked_maps_available() { return winograd_conv2d_available(); }

bool is_blocked(const at::Tensor& x) {
  return x.dim() == 5 && x.size(4) == 16 && x.scalar_type() == at::kFloat && x.is_contiguous() &&
         x.device().is_cpu();
}

at::Tensor to_blocked(const at::Tensor& x) {
  TORCH_CHECK(
      x.dim() == 4 && x.size(1) % 16 == 0 && x.scalar_type() == at::kFloat && x.device().is_cpu(),
      "detkit to_blocked: needs a float32 CPU (N, C, H, W) map with C a multiple of 16, got ",
      x.sizes(), " ", x.scalar_type());
  return ToBlocked::apply(x);
}

at::Tensor from_blocked(const at::Tensor& x, at::MemoryFormat format) {
  check_blocked(x, "from_blocked");
  TORCH_CHECK(format == at::MemoryFormat::Contiguous || format == at::MemoryFormat::ChannelsLast,
              "detkit from_blocked: gives a contiguous or channels-last map, not ", format);
  return FromBlocked::apply(x, format == at::MemoryFormat::ChannelsLast);
}

at::Tensor blocked_conv2d(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                          int64_t stride, int64_t padding, int64_t dilation) {
  check_blocked(input, "blocked_conv2d");
  return conv2d_giving_blocked(input, weight, bias, stride, padding, dilation);
}

at::Tensor plain_to_blocked_conv2d(const at::Tensor& input, const at::Tensor& weight,
                                   const at::Tensor& bias, int64_t stride, int64_t padding,
                                   int64_t dilation) {
  TORCH_CHECK(input.dim() == 4 && input.scalar_type() == at::kFloat && input.device().is_cpu(),
              "detkit plain_to_blocked_conv2d: needs a float32 CPU (N, C, H, W) input, got ",
              input.sizes(), " ", input.scalar_type());
  return conv2d_giving_blocked(input.contiguous(), weight, bias, stride, padding, dilation);
}

at::Tensor blocked_batch_norm(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                              const at::Tensor& running_mean, const at::Tensor& running_var,
                              double momentum, double eps, bool relu) {
  return batch_norm(x, weight, bias, running_mean, running_var, momentum, eps, relu).y;
}

at::Tensor blocked_batch_norm_relu_conv2d(const at::Tensor& x, const BatchNormArgs& norm,
                                          const at::Tensor& weight, const at::Tensor& bias,
                                          int64_t stride, int64_t padding, int64_t dilation) {
  const Normalized n = batch_norm(x, norm.weight, norm.bias, norm.running_mean, norm.running_var,
                                  norm.momentum, norm.eps, /*relu=*/true);
  if (!n.remakeable) return blocked_conv2d(n.y, weight, bias, stride, padding, dilation);
  RECORD_BLOCKED_CONV2D(n.y, weight, stride, padding, dilation);
  return RemadeInputConv2dFunction::apply(n.y, n.x, n.weight, n.bias, n.mean, n.variance, norm.eps,
                                          weight, bias.defined() ? bias : at::empty({0}),
                                          geometry_of(n.y, weight, stride, padding, dilation));
}

at::Tensor blocked_batch_norm_relu_conv2d_batch_norm(const at::Tensor& x, const BatchNormArgs& norm,
                                                     const at::Tensor& weight,
                                                     const at::Tensor& bias, int64_t stride,
                                                     int64_t padding, int64_t dilation,
                                                     const BatchNormArgs& out_norm) {
  const Normalized n = batch_norm(x, norm.weight, norm.bias, norm.running_mean, norm.running_var,
                                  norm.momentum, norm.eps, /*relu=*/true);
  if (!n.remakeable) {
    return blocked_batch_norm(blocked_conv2d(n.y, weight, bias, stride, padding, dilation),
                              out_norm.weight, out_norm.bias, out_norm.running_mean,
                              out_norm.running_var, out_norm.momentum, out_norm.eps);
  }
  TORCH_CHECK(weight.size(0) % 16 == 0,
              "detkit blocked_batch_norm_relu_conv2d_batch_norm: ", weight.size(0),
              " output channels (a multiple of 16 needed)");
  const auto geometry = geometry_of(n.y, weight, stride, padding, dilation);
  // The convolution's output has the second BatchNorm's channels and the geometry's size.
  const auto [out_w, out_b] =
      affine_or_identity(out_norm.weight, out_norm.bias, weight.size(0), x.options());
  variable_list outputs;
  {
    RECORD_BLOCKED_CONV2D(n.y, weight, stride, padding, dilation);
    outputs = RemadeConv2dBatchNormFunction::apply(
        n.y, n.x, n.weight, n.bias, n.mean, n.variance, norm.eps, weight,
        bias.defined() ? bias : at::empty({0}), geometry, out_w, out_b, out_norm.eps);
  }
  update_running_statistics(out_norm.running_mean, out_norm.running_var, out_norm.momentum,
                            outputs[1], outputs[2], outputs[0]);
  return outputs[0];
}

at::Tensor blocked_upsample_nearest2x(const at::Tensor& x) {
  check_blocked(x, "blocked_upsample_nearest2x");
  const int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  return x.reshape({n, c, h, 1, w, 1, 16})
      .expand({n, c, h, 2, w, 2, 16})
      .reshape({n, c, 2 * h, 2 * w, 16});
}

at::Tensor blocked_max_pool2d(const at::Tensor& x, int64_t kernel, int64_t stride,
                              int64_t padding) {
  check_blocked(x, "blocked_max_pool2d");
  // oneDNN's max pooling skips NaN, libtorch's returns it: a map holding one (a diverged step)
  // takes libtorch's path, so the NaN reaches the loss as it would there. at::max reads the map
  // once, and is NaN exactly when a value is.
  if (std::isnan(x.max().item<float>())) {
    return to_blocked(at::max_pool2d(from_blocked(x), kernel, stride, padding));
  }
  return BlockedMaxPool2dFunction::apply(x, kernel, stride, padding);
}

at::Tensor blocked_channel_affine(const at::Tensor& x, const at::Tensor& scale,
                                  const at::Tensor& shift, bool relu) {
  check_blocked(x, "blocked_channel_affine");
  if (scale.requires_grad() || shift.requires_grad()) {  // an eval-mode BN's trainable affine
    const std::vector<int64_t> per_channel = {1, x.size(1), 1, 1, 16};
    at::Tensor y = x * scale.reshape(per_channel) + shift.reshape(per_channel);
    return relu ? at::relu_(y) : y;
  }
  return BlockedAffineFunction::apply(x, scale, shift, relu);
}

at::Tensor blocked_group_norm(const at::Tensor& x, int64_t groups, const at::Tensor& weight,
                              const at::Tensor& bias, double eps, bool relu) {
  check_blocked(x, "blocked_group_norm");
  TORCH_CHECK(weight.defined() == bias.defined(),
              "detkit blocked_group_norm: a weight without a bias or a bias without a weight");
  const at::Tensor none = at::empty({0}, x.options());
  return BlockedGroupNormFunction::apply(x, weight.defined() ? weight : none,
                                         bias.defined() ? bias : none, groups, eps, relu);
}

}  // namespace detkit::ops
