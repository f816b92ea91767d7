// oneDNN's Winograd convolution, called directly: libtorch 1.13 always asks oneDNN for its direct
// algorithm. The same libdnnl.so that libtorch loads runs these kernels, on libtorch's OpenMP
// threads. Tensors stay in libtorch's NCHW layout; each call reorders into the layouts the
// Winograd kernels want (as libtorch's own oneDNN path does for NCHW tensors) and back.
#include "detkit/ops/cpu/winograd_conv2d_kernel.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <memory>
#include <mutex>

#include "detkit/ops/cpu/conv_primitives.h"
#include "detkit/ops/cpu/onednn_execution.h"

namespace detkit::ops::cpu {
namespace {

using dnnl::memory;

struct ShapeKey {
  int64_t n, c, o, h, w;
  bool bias;
  std::array<int64_t, 6> values() const { return {n, c, o, h, w, bias}; }
};

/// The shape of conv(input (N, C, H, W), weight (O, C, 3, 3)).
ShapeKey key_of(const at::Tensor& input, const at::Tensor& weight, bool bias) {
  return {input.size(0), input.size(1), weight.size(0), input.size(2), input.size(3), bias};
}

/// The primitives of one shape. The backward ones are made on first use.
struct WinogradConv {
  ShapeKey key;
  ConvPrimitives p;

  memory::dims src() const { return {key.n, key.c, key.h, key.w}; }
  memory::dims dst() const { return {key.n, key.o, key.h, key.w}; }
  memory::dims weights() const { return {key.o, key.c, 3, 3}; }
  static memory::dims unit() { return {1, 1}; }
};

/// nullptr when oneDNN has no Winograd kernel for the shape (no AVX-512, unsupported sizes).
/// Inference uses the forward-training descriptor too: oneDNN's forward-inference Winograd wants
/// its weights pre-transformed into a layout whose reorder costs more than the convolution
/// (10 ms for 256 -> 256 channels, against 6.5 ms for the whole training-layout call at 48x64),
/// a layout made for weights reordered once; these are reordered per call.
std::unique_ptr<WinogradConv> make_conv(const ShapeKey& k) {
  auto conv = std::unique_ptr<WinogradConv>(new WinogradConv{k, {}});
  const auto bias = k.bias ? any_layout({k.o}) : memory::desc();
  try {
    dnnl::convolution_forward::desc d(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_winograd,
        any_layout(conv->src()), any_layout(conv->weights()), bias, any_layout(conv->dst()),
        WinogradConv::unit(), WinogradConv::unit(), WinogradConv::unit());
    conv->p.forward_pd =
        dnnl::convolution_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
  } catch (const dnnl::error&) {
    return nullptr;
  }
  conv->p.forward = dnnl::convolution_forward(conv->p.forward_pd);
  return conv;
}

/// The backward primitives, made once per shape on its first backward pass.
void ensure_backward(WinogradConv& conv) {
  std::call_once(conv.p.backward_made, [&conv] {
    const auto& k = conv.key;
    dnnl::convolution_backward_data::desc data(
        dnnl::algorithm::convolution_winograd, any_layout(conv.src()), any_layout(conv.weights()),
        any_layout(conv.dst()), WinogradConv::unit(), WinogradConv::unit(), WinogradConv::unit());
    conv.p.backward_input_pd = dnnl::convolution_backward_data::primitive_desc(
        data, user_scratchpad(), cpu_engine(), conv.p.forward_pd);
    conv.p.backward_input = dnnl::convolution_backward_data(*conv.p.backward_input_pd);
    dnnl::convolution_backward_weights::desc weights(
        dnnl::algorithm::convolution_winograd, any_layout(conv.src()), any_layout(conv.weights()),
        k.bias ? any_layout({k.o}) : memory::desc(), any_layout(conv.dst()), WinogradConv::unit(),
        WinogradConv::unit(), WinogradConv::unit());
    conv.p.backward_weight_pd = dnnl::convolution_backward_weights::primitive_desc(
        weights, user_scratchpad(), cpu_engine(), conv.p.forward_pd);
    conv.p.backward_weight = dnnl::convolution_backward_weights(*conv.p.backward_weight_pd);
  });
}

PrimitiveCache<ShapeKey, WinogradConv>& cache() {
  static PrimitiveCache<ShapeKey, WinogradConv> c(&make_conv);
  return c;
}

using tag = memory::format_tag;

std::shared_ptr<WinogradConv> conv_for(const ShapeKey& k) {
  auto conv = cache().get(k);
  TORCH_CHECK(conv, "detkit winograd_conv2d: oneDNN has no Winograd kernel for input (", k.n, ", ",
              k.c, ", ", k.h, ", ", k.w, ") and ", k.o,
              " output channels on this CPU (check winograd_kernel_available first)");
  return conv;
}

/// The primitives of k's shape for n images, the backward ones made if `backward`.
ConvPrimitivesFor primitives_for(const ShapeKey& k, bool backward) {
  return primitives_by_batch(k, backward, &conv_for, &ensure_backward);
}

// How a feature map is stored: NCHW (contiguous) or NHWC (channels-last contiguous).
tag map_layout(const at::Tensor& t) {
  if (t.is_contiguous()) return tag::nchw;
  TORCH_CHECK(t.is_contiguous(at::MemoryFormat::ChannelsLast), "detkit winograd_conv2d: a map of ",
              t.sizes(), " with strides ", t.strides(), " is neither NCHW nor channels-last");
  return tag::nhwc;
}

at::MemoryFormat memory_format_of(tag layout) {
  return layout == tag::nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous;
}

}  // namespace

bool winograd_kernel_available(int64_t n, int64_t c, int64_t o, int64_t h, int64_t w, bool bias) {
  return cache().get({n, c, o, h, w, bias}) != nullptr;
}

at::Tensor winograd_conv2d_forward(const at::Tensor& input, const at::Tensor& weight,
                                   const at::Tensor& bias) {
  const ShapeKey k = key_of(input, weight, bias.defined());
  const tag maps = map_layout(input);
  at::Tensor out =
      at::empty({k.n, k.o, k.h, k.w}, input.options().memory_format(memory_format_of(maps)));
  run_conv_forward_by_images(primitives_for(k, /*backward=*/false), input, weight, bias, out, maps);
  return out;
}

int64_t winograd_scratchpad_bytes(int64_t n, int64_t c, int64_t o, int64_t h, int64_t w,
                                  bool bias) {
  const auto p = primitives_for({n, c, o, h, w, bias}, /*backward=*/true)(n);
  return std::max(forward_scratchpad_bytes(*p), backward_scratchpad_bytes(*p));
}

ConvGrads winograd_conv2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                   const at::Tensor& weight, bool with_bias,
                                   std::array<bool, 3> needed) {
  const tag maps = map_layout(input);
  return run_conv_backward_by_images(primitives_for(key_of(input, weight, with_bias), true),
                                     grad_output.contiguous(memory_format_of(maps)), input, weight,
                                     with_bias, needed, maps);
}

}  // namespace detkit::ops::cpu
