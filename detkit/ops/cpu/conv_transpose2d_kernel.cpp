// oneDNN's deconvolution backward passes, called directly: 2-4x faster than libtorch's im2col +
// GEMM path for the mask and keypoint heads' upsampling (bench/conv_algorithms). Its forward pass
// is not: it only hints the backward primitives' layouts. Tensors stay NCHW; each call reorders
// in and out.
#include "detkit/ops/cpu/conv_transpose2d_kernel.h"

#include <ATen/ATen.h>

#include <cstring>
#include <memory>
#include <unordered_map>

#include "detkit/ops/cpu/onednn_execution.h"

namespace detkit::ops::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

/// The backward primitives of one shape, made together (well under a millisecond), so a shape
/// runs on oneDNN for both gradients or for neither.
struct Deconvolution {
  ConvTransposeShape shape;
  dnnl::deconvolution_forward::primitive_desc forward_pd;  // the hint the backward ones take
  dnnl::deconvolution_backward_data::primitive_desc backward_input_pd;
  dnnl::deconvolution_backward_data backward_input;
  dnnl::deconvolution_backward_weights::primitive_desc backward_weight_pd;
  dnnl::deconvolution_backward_weights backward_weight;

  memory::dims src() const { return {shape.n, shape.c, shape.h, shape.w}; }
  memory::dims dst() const { return {shape.n, shape.o, shape.out_h(), shape.out_w()}; }
  // oneDNN orders a deconvolution's weight dims (O, C, k, k); PyTorch stores them (C, O, k, k),
  // which is oneDNN's "iohw" layout of those dims.
  memory::dims weights() const { return {shape.o, shape.c, shape.kernel, shape.kernel}; }
  memory::dims strides() const { return {shape.stride, shape.stride}; }
  memory::dims padding() const { return {shape.padding, shape.padding}; }
  memory::desc bias() const { return shape.bias ? any_layout({shape.o}) : memory::desc(); }
};

bool is_jit(const dnnl::primitive_desc_base& pd) {
  return std::strncmp(pd.impl_info_str(), "jit", 3) == 0;
}

/// Throws dnnl::error where oneDNN cannot reorder between `plain` and the primitive's layout.
void check_reorders(const memory::desc& primitive, const memory::dims& dims, tag plain) {
  const memory::desc user(dims, memory::data_type::f32, plain);
  dnnl::reorder::primitive_desc(cpu_engine(), user, cpu_engine(), primitive);
  dnnl::reorder::primitive_desc(cpu_engine(), primitive, cpu_engine(), user);
}

void make_backward(Deconvolution& d) {  // after forward_pd, which hints both
  dnnl::deconvolution_backward_data::desc data(
      dnnl::algorithm::deconvolution_direct, any_layout(d.src()), any_layout(d.weights()),
      any_layout(d.dst()), d.strides(), d.padding(), d.padding());
  d.backward_input_pd = dnnl::deconvolution_backward_data::primitive_desc(
      data, user_scratchpad(), cpu_engine(), d.forward_pd);
  d.backward_input = dnnl::deconvolution_backward_data(d.backward_input_pd);
  dnnl::deconvolution_backward_weights::desc weights(
      dnnl::algorithm::deconvolution_direct, any_layout(d.src()), any_layout(d.weights()), d.bias(),
      any_layout(d.dst()), d.strides(), d.padding(), d.padding());
  d.backward_weight_pd = dnnl::deconvolution_backward_weights::primitive_desc(
      weights, user_scratchpad(), cpu_engine(), d.forward_pd);
  d.backward_weight = dnnl::deconvolution_backward_weights(d.backward_weight_pd);
}

/// nullptr when oneDNN has no JIT kernel for either gradient of the shape, or cannot reorder
/// between PyTorch's layouts and the kernels' (blocked, channels padded to 16).
std::unique_ptr<Deconvolution> make_deconvolution(const ConvTransposeShape& s) {
  auto d = std::make_unique<Deconvolution>();
  d->shape = s;
  try {
    dnnl::deconvolution_forward::desc desc(
        dnnl::prop_kind::forward_training, dnnl::algorithm::deconvolution_direct,
        any_layout(d->src()), any_layout(d->weights()), d->bias(), any_layout(d->dst()),
        d->strides(), d->padding(), d->padding());
    d->forward_pd =
        dnnl::deconvolution_forward::primitive_desc(desc, user_scratchpad(), cpu_engine());
    make_backward(*d);
    if (!is_jit(d->backward_input_pd) || !is_jit(d->backward_weight_pd)) return nullptr;
    check_reorders(d->backward_input_pd.diff_dst_desc(), d->dst(), tag::nchw);
    check_reorders(d->backward_input_pd.diff_src_desc(), d->src(), tag::nchw);
    check_reorders(d->backward_input_pd.weights_desc(), d->weights(), tag::iohw);
    check_reorders(d->backward_weight_pd.diff_weights_desc(), d->weights(), tag::iohw);
    check_reorders(d->backward_weight_pd.src_desc(), d->src(), tag::nchw);
    check_reorders(d->backward_weight_pd.diff_dst_desc(), d->dst(), tag::nchw);
  } catch (const dnnl::error&) {
    return nullptr;
  }
  return d;
}

PrimitiveCache<ConvTransposeShape, Deconvolution>& cache() {
  static PrimitiveCache<ConvTransposeShape, Deconvolution> c(&make_deconvolution);
  return c;
}

ConvTransposeShape shape_of(const at::Tensor& input, const at::Tensor& weight, int64_t stride,
                            int64_t padding, bool bias) {
  return {input.size(0),  input.size(1), weight.size(1), input.size(2), input.size(3),
          weight.size(2), stride,        padding,        bias};
}

std::shared_ptr<Deconvolution> deconvolution_for(const ConvTransposeShape& s) {
  auto d = cache().get(s);
  TORCH_CHECK(d, "detkit conv_transpose2d: oneDNN has no JIT kernel for input (", s.n, ", ", s.c,
              ", ", s.h, ", ", s.w, "), ", s.o, " outputs, kernel ", s.kernel, ", stride ",
              s.stride, ", padding ", s.padding,
              " on this CPU (check conv_transpose_kernel_available first)");
  return d;
}

}  // namespace

bool conv_transpose_kernel_available(const ConvTransposeShape& shape) {
  return cache().get(shape) != nullptr;
}

ConvGrads conv_transpose2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                    const at::Tensor& weight, int64_t stride, int64_t padding,
                                    bool with_bias, std::array<bool, 3> needed) {
  const auto d = deconvolution_for(shape_of(input, weight, stride, padding, with_bias));
  ConvGrads grads;
  Execution e;  // one for both passes: grad_output is reordered once
  if (needed[0]) {
    const auto& pd = d->backward_input_pd;
    grads.input = at::empty_like(input);
    e.run(d->backward_input, pd,
          {{DNNL_ARG_DIFF_DST, e.input(grad_output, pd.diff_dst_desc(), tag::nchw)},
           {DNNL_ARG_WEIGHTS, e.input(weight, pd.weights_desc(), tag::iohw)},
           {DNNL_ARG_DIFF_SRC, e.output(grads.input, pd.diff_src_desc(), tag::nchw)}});
  }
  if (needed[1] || (with_bias && needed[2])) {
    const auto& pd = d->backward_weight_pd;
    grads.weight = at::empty_like(weight);
    if (with_bias) grads.bias = at::empty({d->shape.o}, weight.options());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, e.input(input, pd.src_desc(), tag::nchw)},
        {DNNL_ARG_DIFF_DST, e.input(grad_output, pd.diff_dst_desc(), tag::nchw)},
        {DNNL_ARG_DIFF_WEIGHTS, e.output(grads.weight, pd.diff_weights_desc(), tag::iohw)}};
    if (with_bias)
      args.emplace(DNNL_ARG_DIFF_BIAS, e.output(grads.bias, pd.diff_bias_desc(), tag::x));
    e.run(d->backward_weight, pd, std::move(args));
    if (!needed[1]) grads.weight = at::Tensor();
    if (!needed[2]) grads.bias = at::Tensor();
  }
  return grads;
}

}  // namespace detkit::ops::cpu
