#include "detkit/ops/cpu/conv_primitives.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "detkit/ops/cpu/onednn_execution.h"

namespace detkit::ops::cpu {

using dnnl::memory;
using tag = memory::format_tag;

void run_conv_forward(const ConvPrimitives& p, const at::Tensor& input, const at::Tensor& weight,
                      const at::Tensor& bias, const at::Tensor& out, MapLayouts maps) {
  const auto& pd = p.forward_pd;
  Execution e;
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, e.input(input, pd.src_desc(), maps.input)},
      {DNNL_ARG_WEIGHTS, e.input(weight.contiguous(), pd.weights_desc(), tag::oihw)},
      {DNNL_ARG_DST, e.output(out, pd.dst_desc(), maps.output)}};
  if (bias.defined())
    args.emplace(DNNL_ARG_BIAS, e.input(bias.contiguous(), pd.bias_desc(), tag::x));
  e.run(p.forward, pd, std::move(args));
}

ConvGrads run_conv_backward(const ConvPrimitives& p, const at::Tensor& grad_output,
                            const at::Tensor& input, const at::Tensor& weight, bool with_bias,
                            std::array<bool, 3> needed, MapLayouts maps,
                            const at::Tensor& grad_input) {
  const at::Tensor w = weight.contiguous();
  ConvGrads grads;
  Execution e;  // one for both passes: grad_output is reordered once
  if (needed[0]) {
    const auto& pd = *p.backward_input_pd;
    grads.input = grad_input.defined() ? grad_input : at::empty_like(input);
    e.run(*p.backward_input, pd,
          {{DNNL_ARG_DIFF_DST, e.input(grad_output, pd.diff_dst_desc(), maps.output)},
           {DNNL_ARG_WEIGHTS, e.input(w, pd.weights_desc(), tag::oihw)},
           {DNNL_ARG_DIFF_SRC, e.output(grads.input, pd.diff_src_desc(), maps.input)}});
  }
  if (needed[1] || (with_bias && needed[2])) {
    const auto& pd = *p.backward_weight_pd;
    grads.weight = at::empty_like(w);
    if (with_bias) grads.bias = at::empty({w.size(0)}, w.options());
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, e.input(input, pd.src_desc(), maps.input)},
        {DNNL_ARG_DIFF_DST, e.input(grad_output, pd.diff_dst_desc(), maps.output)},
        {DNNL_ARG_DIFF_WEIGHTS, e.output(grads.weight, pd.diff_weights_desc(), tag::oihw)}};
    if (with_bias)
      args.emplace(DNNL_ARG_DIFF_BIAS, e.output(grads.bias, pd.diff_bias_desc(), tag::x));
    e.run(*p.backward_weight, pd, std::move(args));
    if (!needed[1]) grads.weight = at::Tensor();
    if (!needed[2]) grads.bias = at::Tensor();
  }
  return grads;
}

int64_t forward_scratchpad_bytes(const ConvPrimitives& p) {
  return int64_t(p.forward_pd.scratchpad_desc().get_size());
}

int64_t backward_scratchpad_bytes(const ConvPrimitives& p) {
  return int64_t(std::max(p.backward_input_pd->scratchpad_desc().get_size(),
                          p.backward_weight_pd->scratchpad_desc().get_size()));
}

namespace {

/// How many of n images one call takes so that its scratchpad stays within
/// kScratchpadPerBatchBytes (at least one): a scratchpad grows about linearly with the batch.
int64_t images_per_call(int64_t n, int64_t whole_batch_bytes) {
  if (whole_batch_bytes <= kScratchpadPerBatchBytes) return n;
  return std::max<int64_t>(1, n * kScratchpadPerBatchBytes / whole_batch_bytes);
}

}  // namespace

void run_conv_forward_by_images(const ConvPrimitivesFor& primitives, const at::Tensor& input,
                                const at::Tensor& weight, const at::Tensor& bias,
                                const at::Tensor& out, MapLayouts maps) {
  const int64_t n = input.size(0);
  const auto whole = primitives(n);
  const int64_t per_call = images_per_call(n, forward_scratchpad_bytes(*whole));
  for (int64_t i = 0; i < n; i += per_call) {
    const int64_t k = std::min(per_call, n - i);
    run_conv_forward(k == n ? *whole : *primitives(k), input.narrow(0, i, k), weight, bias,
                     out.narrow(0, i, k), maps);
  }
}

ConvGrads run_conv_backward_by_images(const ConvPrimitivesFor& primitives,
                                      const at::Tensor& grad_output, const at::Tensor& input,
                                      const at::Tensor& weight, bool with_bias,
                                      std::array<bool, 3> needed, MapLayouts maps) {
  const int64_t n = input.size(0);
  const auto whole = primitives(n);
  const int64_t per_call = images_per_call(n, backward_scratchpad_bytes(*whole));
  if (per_call == n)
    return run_conv_backward(*whole, grad_output, input, weight, with_bias, needed, maps);
  ConvGrads grads;
  if (needed[0]) grads.input = at::empty_like(input);
  for (int64_t i = 0; i < n; i += per_call) {
    const int64_t k = std::min(per_call, n - i);
    ConvGrads g = run_conv_backward(*primitives(k), grad_output.narrow(0, i, k),
                                    input.narrow(0, i, k), weight, with_bias, needed, maps,
                                    needed[0] ? grads.input.narrow(0, i, k) : at::Tensor());
    for (auto [sum, part] : {std::pair{&grads.weight, &g.weight}, {&grads.bias, &g.bias}}) {
      if (!part->defined()) continue;
      *sum = sum->defined() ? sum->add_(*part) : *part;
    }
  }
  return grads;
}

}  // namespace detkit::ops::cpu
