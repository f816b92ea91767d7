// oneDNN's convolution primitives (direct or Winograd) with their maps fixed to nChw16c (a first
// convolution's input to NCHW): no map is reordered; only the weights are, per call, from
// libtorch's OIHW (as libtorch's path does).
#include "detkit/ops/cpu/blocked_conv2d_kernel.h"

#include <ATen/ATen.h>

#include <memory>
#include <mutex>

#include "detkit/ops/cpu/blocked_layout.h"
#include "detkit/ops/cpu/conv_primitives.h"
#include "detkit/ops/cpu/onednn_execution.h"

namespace detkit::ops::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

struct ShapeKey {
  int64_t n, c, o, h, w, kernel, stride, padding, dilation;
  bool bias, winograd, plain_input;
  std::array<int64_t, 12> values() const {
    return {n, c, o, h, w, kernel, stride, padding, dilation, bias, winograd, plain_input};
  }
  ConvGeometry geometry() const { return {stride, padding, dilation, winograd}; }
  MapLayouts layouts() const { return {plain_input ? tag::nchw : tag::nChw16c, tag::nChw16c}; }
};

ShapeKey key_of(const at::Tensor& input, const at::Tensor& weight, bool bias,
                const ConvGeometry& g) {
  const bool plain = input.dim() == 4;
  TORCH_CHECK(((input.dim() == 5 && input.size(4) == 16) || plain) && input.is_contiguous() &&
                  input.scalar_type() == at::kFloat,
              "detkit blocked_conv2d: the input must be a contiguous float32 (N, C/16, H, W, 16) "
              "map, or (N, C, H, W), got ",
              input.sizes(), " ", input.scalar_type());
  TORCH_CHECK(weight.scalar_type() == at::kFloat,
              "detkit blocked_conv2d: a float32 weight needed, got ", weight.scalar_type());
  const int64_t channels = plain ? input.size(1) : input.size(1) * 16;
  TORCH_CHECK(weight.dim() == 4 && weight.size(2) == weight.size(3) && weight.size(1) == channels &&
                  weight.size(0) % 16 == 0,
              "detkit blocked_conv2d: weight ", weight.sizes(), " for an input of ", channels,
              " channels (one group, square kernel, outputs a multiple of 16)");
  return {input.size(0), channels,  weight.size(0), input.size(2), input.size(3), weight.size(2),
          g.stride,      g.padding, g.dilation,     bias,          g.winograd,    plain};
}

struct BlockedConv {
  ShapeKey key;
  ConvPrimitives p;
  bool winograd = false;  // the kernels run: a shape Winograd was asked for runs direct where
                          // oneDNN has no Winograd kernel for it

  int64_t out_h() const { return key.geometry().out_size(key.h, key.kernel); }
  int64_t out_w() const { return key.geometry().out_size(key.w, key.kernel); }
  memory::desc src() const {
    return memory::desc({key.n, key.c, key.h, key.w}, memory::data_type::f32, key.layouts().input);
  }
  memory::desc dst() const { return blocked_desc({key.n, key.o, out_h(), out_w()}); }
  memory::desc weights() const { return any_layout({key.o, key.c, key.kernel, key.kernel}); }
  memory::desc bias() const { return key.bias ? any_layout({key.o}) : memory::desc(); }
  dnnl::algorithm algorithm() const {
    return winograd ? dnnl::algorithm::convolution_winograd : dnnl::algorithm::convolution_direct;
  }
  memory::dims strides() const { return {key.stride, key.stride}; }
  memory::dims dilates() const { return {key.dilation - 1, key.dilation - 1}; }  // oneDNN: 0 = none
  memory::dims padding_l() const { return {key.padding, key.padding}; }
  memory::dims padding_r() const {
    const int64_t extent = key.dilation * (key.kernel - 1) + 1;
    return {far_padding(key.h, out_h(), extent, key.stride, key.padding),
            far_padding(key.w, out_w(), extent, key.stride, key.padding)};
  }
};

dnnl::convolution_forward::primitive_desc forward_pd(const BlockedConv& conv) {
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, conv.algorithm(), conv.src(),
                                    conv.weights(), conv.bias(), conv.dst(), conv.strides(),
                                    conv.dilates(), conv.padding_l(), conv.padding_r());
  return dnnl::convolution_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
}

std::unique_ptr<BlockedConv> make_conv(const ShapeKey& k) {
  auto conv = std::unique_ptr<BlockedConv>(new BlockedConv{k, {}});
  conv->winograd = k.winograd;
  try {
    conv->p.forward_pd = forward_pd(*conv);
  } catch (const dnnl::error&) {
    if (!conv->winograd) throw;
    conv->winograd = false;
    conv->p.forward_pd = forward_pd(*conv);
  }
  conv->p.forward = dnnl::convolution_forward(conv->p.forward_pd);
  return conv;
}

void ensure_backward(BlockedConv& conv) {
  std::call_once(conv.p.backward_made, [&conv] {
    dnnl::convolution_backward_data::desc data(conv.algorithm(), conv.src(), conv.weights(),
                                               conv.dst(), conv.strides(), conv.dilates(),
                                               conv.padding_l(), conv.padding_r());
    conv.p.backward_input_pd = dnnl::convolution_backward_data::primitive_desc(
        data, user_scratchpad(), cpu_engine(), conv.p.forward_pd);
    conv.p.backward_input = dnnl::convolution_backward_data(*conv.p.backward_input_pd);
    dnnl::convolution_backward_weights::desc weights(
        conv.algorithm(), conv.src(), conv.weights(), conv.bias(), conv.dst(), conv.strides(),
        conv.dilates(), conv.padding_l(), conv.padding_r());
    conv.p.backward_weight_pd = dnnl::convolution_backward_weights::primitive_desc(
        weights, user_scratchpad(), cpu_engine(), conv.p.forward_pd);
    conv.p.backward_weight = dnnl::convolution_backward_weights(*conv.p.backward_weight_pd);
  });
}

std::shared_ptr<BlockedConv> conv_for(const ShapeKey& k) {
  static PrimitiveCache<ShapeKey, BlockedConv> cache(&make_conv);
  return cache.get(k);
}

/// The primitives of k's shape for n images, the backward ones made if `backward`.
ConvPrimitivesFor primitives_for(const ShapeKey& k, bool backward) {
  return primitives_by_batch(k, backward, &conv_for, &ensure_backward);
}

at::Tensor blocked_empty(int64_t n, int64_t channels, int64_t h, int64_t w,
                         const at::TensorOptions& options) {
  return at::empty({n, channels / 16, h, w, 16}, options);
}

}  // namespace

at::Tensor blocked_conv2d_forward(const at::Tensor& input, const at::Tensor& weight,
                                  const at::Tensor& bias, const ConvGeometry& geometry) {
  TORCH_CHECK(!bias.defined() || bias.scalar_type() == at::kFloat,
              "detkit blocked_conv2d: a float32 bias needed, got ", bias.scalar_type());
  const ShapeKey k = key_of(input, weight, bias.defined(), geometry);
  const auto conv = conv_for(k);
  at::Tensor out = blocked_empty(k.n, k.o, conv->out_h(), conv->out_w(), input.options());
  run_conv_forward_by_images(primitives_for(k, /*backward=*/false), input, weight, bias, out,
                             k.layouts());
  return out;
}

ConvGrads blocked_conv2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                  const at::Tensor& weight, bool with_bias,
                                  const ConvGeometry& geometry, std::array<bool, 3> needed) {
  const ShapeKey k = key_of(input, weight, with_bias, geometry);
  return run_conv_backward_by_images(primitives_for(k, /*backward=*/true), grad_output.contiguous(),
                                     input, weight, with_bias, needed, k.layouts());
}

}  // namespace detkit::ops::cpu
