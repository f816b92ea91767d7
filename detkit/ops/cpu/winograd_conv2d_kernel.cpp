// oneDNN's Winograd convolution, called directly: libtorch 1.13 always asks oneDNN for its direct
// algorithm. The same libdnnl.so that libtorch loads runs these kernels, on libtorch's OpenMP
// threads. Tensors stay in libtorch's NCHW layout; each call reorders into the layouts the
// Winograd kernels want (as libtorch's own oneDNN path does for NCHW tensors) and back.
#include "detkit/ops/cpu/winograd_conv2d_kernel.h"

#include <ATen/ATen.h>

#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>
#include <vector>

namespace detkit::ops::cpu {
namespace {

using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

struct ShapeKey {
  int64_t n, c, o, h, w;
  bool bias;
  bool operator==(const ShapeKey& k) const {
    return n == k.n && c == k.c && o == k.o && h == k.h && w == k.w && bias == k.bias;
  }
};

struct ShapeKeyHash {
  size_t operator()(const ShapeKey& k) const {
    size_t h = 0;
    for (int64_t v : {k.n, k.c, k.o, k.h, k.w, int64_t(k.bias)})
      h = h * 1000003u ^ std::hash<int64_t>()(v);
    return h;
  }
};

/// The shape of conv(input (N, C, H, W), weight (O, C, 3, 3)).
ShapeKey key_of(const at::Tensor& input, const at::Tensor& weight, bool bias) {
  return {input.size(0), input.size(1), weight.size(0), input.size(2), input.size(3), bias};
}

memory::desc any_layout(const memory::dims& dims) {
  return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
}

/// The primitives of one shape. The backward ones are made on first use.
struct WinogradConv {
  ShapeKey key;
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_forward forward;
  std::optional<dnnl::convolution_backward_data::primitive_desc> backward_input_pd;
  std::optional<dnnl::convolution_backward_data> backward_input;
  std::optional<dnnl::convolution_backward_weights::primitive_desc> backward_weight_pd;
  std::optional<dnnl::convolution_backward_weights> backward_weight;

  memory::dims src() const { return {key.n, key.c, key.h, key.w}; }
  memory::dims dst() const { return {key.n, key.o, key.h, key.w}; }
  memory::dims weights() const { return {key.o, key.c, 3, 3}; }
  static memory::dims unit() { return {1, 1}; }
};

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;  // the scratchpad is Execution's (a buffer kept per thread)
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

/// nullptr when oneDNN has no Winograd kernel for the shape (no AVX-512, unsupported sizes).
/// Inference uses the forward-training descriptor too: oneDNN's forward-inference Winograd wants
/// its weights pre-transformed into a layout whose reorder costs more than the convolution
/// (10 ms for 256 -> 256 channels, against 6.5 ms for the whole training-layout call at 48x64),
/// a layout made for weights reordered once; these are reordered per call.
std::unique_ptr<WinogradConv> make_conv(const ShapeKey& k) {
  auto conv = std::unique_ptr<WinogradConv>(new WinogradConv{k, {}, {}, {}, {}, {}, {}});
  const auto bias = k.bias ? any_layout({k.o}) : memory::desc();
  try {
    dnnl::convolution_forward::desc d(
        dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_winograd,
        any_layout(conv->src()), any_layout(conv->weights()), bias, any_layout(conv->dst()),
        WinogradConv::unit(), WinogradConv::unit(), WinogradConv::unit());
    conv->forward_pd =
        dnnl::convolution_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
  } catch (const dnnl::error&) {
    return nullptr;
  }
  conv->forward = dnnl::convolution_forward(conv->forward_pd);
  return conv;
}

/// Shapes seen so far (a model sees a few dozen; the mask head one per foreground count).
class ConvCache {
 public:
  std::shared_ptr<WinogradConv> get(const ShapeKey& k) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = convs_.find(k);
    if (it != convs_.end()) return it->second;
    if (convs_.size() >= kMaxShapes) convs_.clear();  // the primitives stay in oneDNN's own cache
    return convs_.emplace(k, make_conv(k)).first->second;
  }

  void ensure_backward(WinogradConv& conv) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto& k = conv.key;
    if (!conv.backward_input_pd) {
      dnnl::convolution_backward_data::desc d(
          dnnl::algorithm::convolution_winograd, any_layout(conv.src()), any_layout(conv.weights()),
          any_layout(conv.dst()), WinogradConv::unit(), WinogradConv::unit(), WinogradConv::unit());
      conv.backward_input_pd = dnnl::convolution_backward_data::primitive_desc(
          d, user_scratchpad(), cpu_engine(), conv.forward_pd);
      conv.backward_input = dnnl::convolution_backward_data(*conv.backward_input_pd);
    }
    if (!conv.backward_weight_pd) {
      dnnl::convolution_backward_weights::desc d(
          dnnl::algorithm::convolution_winograd, any_layout(conv.src()), any_layout(conv.weights()),
          k.bias ? any_layout({k.o}) : memory::desc(), any_layout(conv.dst()), WinogradConv::unit(),
          WinogradConv::unit(), WinogradConv::unit());
      conv.backward_weight_pd = dnnl::convolution_backward_weights::primitive_desc(
          d, user_scratchpad(), cpu_engine(), conv.forward_pd);
      conv.backward_weight = dnnl::convolution_backward_weights(*conv.backward_weight_pd);
    }
  }

 private:
  static constexpr size_t kMaxShapes = 512;
  std::mutex mutex_;
  std::unordered_map<ShapeKey, std::shared_ptr<WinogradConv>, ShapeKeyHash> convs_;
};

ConvCache& cache() {
  static ConvCache c;
  return c;
}

/// One execution: user tensors in libtorch's layouts, reordered to and from the primitive's.
class Execution {
 public:
  Execution() : stream_(cpu_engine()) {}

  /// `t` (contiguous float32) as the primitive wants it: the tensor itself when the layouts match.
  memory input(const at::Tensor& t, const memory::desc& want, memory::format_tag plain) {
    memory user(memory::desc(dims_of(t), memory::data_type::f32, plain), cpu_engine(),
                t.data_ptr());
    if (user.get_desc() == want) return user;
    memory m = scratch(want);
    dnnl::reorder(user, m).execute(stream_, user, m);
    return m;
  }

  /// Where the primitive writes a result that must end up in `t`; run() copies it there.
  memory output(const at::Tensor& t, const memory::desc& made, memory::format_tag plain) {
    memory user(memory::desc(dims_of(t), memory::data_type::f32, plain), cpu_engine(),
                t.data_ptr());
    if (user.get_desc() == made) return user;
    memory m = scratch(made);
    pending_.push_back({m, user});
    return m;
  }

  void run(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd,
           std::unordered_map<int, memory> args) {
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc()));
    p.execute(stream_, args);
    for (auto& [made, user] : pending_) dnnl::reorder(made, user).execute(stream_, made, user);
    pending_.clear();
    stream_.wait();
  }

 private:
  static memory::dims dims_of(const at::Tensor& t) {
    return memory::dims(t.sizes().begin(), t.sizes().end());
  }

  memory scratch(const memory::desc& d) {
    buffers_.push_back(at::empty({int64_t(d.get_size())}, at::kByte));
    return memory(d, cpu_engine(), buffers_.back().data_ptr());
  }

  /// The kernels' working memory (tens of MB for a large map), kept per thread and grown as
  /// needed: allocated per call, glibc maps large blocks afresh and the page faults of zeroing
  /// them took as long as the convolution (2 x 256 x 48 x 64: 21 ms a call against 9 ms).
  static memory scratchpad(const memory::desc& d) {
    thread_local at::Tensor buffer;
    const int64_t bytes = int64_t(d.get_size());
    if (!buffer.defined() || buffer.numel() < bytes) {
      buffer = at::Tensor();  // the old one first: the peak is the larger buffer, not both
      buffer = at::empty({bytes}, at::kByte);
    }
    return memory(d, cpu_engine(), buffer.data_ptr());
  }

  dnnl::stream stream_;
  std::vector<at::Tensor> buffers_;
  std::vector<std::pair<memory, memory>> pending_;
};

using tag = memory::format_tag;

std::shared_ptr<WinogradConv> conv_for(const ShapeKey& k) {
  auto conv = cache().get(k);
  TORCH_CHECK(conv, "detkit winograd_conv2d: oneDNN has no Winograd kernel for input (", k.n, ", ",
              k.c, ", ", k.h, ", ", k.w, ") and ", k.o,
              " output channels on this CPU (check winograd_kernel_available first)");
  return conv;
}

}  // namespace

bool winograd_kernel_available(int64_t n, int64_t c, int64_t o, int64_t h, int64_t w, bool bias) {
  return cache().get({n, c, o, h, w, bias}) != nullptr;
}

at::Tensor winograd_conv2d_forward(const at::Tensor& input, const at::Tensor& weight,
                                   const at::Tensor& bias) {
  const ShapeKey k = key_of(input, weight, bias.defined());
  const auto conv = conv_for(k);
  const auto& pd = conv->forward_pd;
  at::Tensor out = at::empty({k.n, k.o, k.h, k.w}, input.options());
  Execution e;
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, e.input(input, pd.src_desc(), tag::nchw)},
      {DNNL_ARG_WEIGHTS, e.input(weight, pd.weights_desc(), tag::oihw)},
      {DNNL_ARG_DST, e.output(out, pd.dst_desc(), tag::nchw)}};
  if (k.bias) args.emplace(DNNL_ARG_BIAS, e.input(bias, pd.bias_desc(), tag::x));
  e.run(conv->forward, pd, std::move(args));
  return out;
}

WinogradGrads winograd_conv2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                       const at::Tensor& weight, bool with_bias,
                                       std::array<bool, 3> needed) {
  const ShapeKey k = key_of(input, weight, with_bias);
  const auto conv = conv_for(k);
  cache().ensure_backward(*conv);
  WinogradGrads grads;
  if (needed[0]) {
    const auto& pd = *conv->backward_input_pd;
    grads.input = at::empty_like(input);
    Execution e;
    e.run(*conv->backward_input, pd,
          {{DNNL_ARG_DIFF_DST, e.input(grad_output, pd.diff_dst_desc(), tag::nchw)},
           {DNNL_ARG_WEIGHTS, e.input(weight, pd.weights_desc(), tag::oihw)},
           {DNNL_ARG_DIFF_SRC, e.output(grads.input, pd.diff_src_desc(), tag::nchw)}});
  }
  if (needed[1] || (with_bias && needed[2])) {  // oneDNN computes both in one pass
    const auto& pd = *conv->backward_weight_pd;
    grads.weight = at::empty_like(weight);
    if (with_bias) grads.bias = at::empty({k.o}, weight.options());
    Execution e;
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, e.input(input, pd.src_desc(), tag::nchw)},
        {DNNL_ARG_DIFF_DST, e.input(grad_output, pd.diff_dst_desc(), tag::nchw)},
        {DNNL_ARG_DIFF_WEIGHTS, e.output(grads.weight, pd.diff_weights_desc(), tag::oihw)}};
    if (with_bias)
      args.emplace(DNNL_ARG_DIFF_BIAS, e.output(grads.bias, pd.diff_bias_desc(), tag::x));
    e.run(*conv->backward_weight, pd, std::move(args));
    if (!needed[1]) grads.weight = at::Tensor();
    if (!needed[2]) grads.bias = at::Tensor();
  }
  return grads;
}

}  // namespace detkit::ops::cpu
