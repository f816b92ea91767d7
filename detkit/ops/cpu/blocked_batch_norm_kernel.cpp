// oneDNN's batch normalization, forward training and backward, on nChw16c maps (no reorders).
#include "detkit/ops/cpu/blocked_batch_norm_kernel.h"

#include <ATen/ATen.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "detkit/ops/cpu/blocked_layout.h"
#include "detkit/ops/cpu/onednn_execution.h"

namespace detkit::ops::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

struct ShapeKey {
  int64_t n, c, h, w;
  double eps;
  bool relu;
  bool given_statistics = false;  // the mean and variance are inputs (a remake), not computed
  std::array<int64_t, 7> values() const {
    int64_t eps_bits;
    std::memcpy(&eps_bits, &eps, sizeof eps_bits);
    return {n, c, h, w, eps_bits, relu, given_statistics};
  }
  dnnl::normalization_flags flags() const {
    auto f = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    if (relu) f = f | dnnl::normalization_flags::fuse_norm_relu;
    if (given_statistics) f = f | dnnl::normalization_flags::use_global_stats;
    return f;
  }
};

ShapeKey key_of(const at::Tensor& x, const at::Tensor& weight, double eps, bool relu) {
  check_blocked_map(x, "blocked_batch_norm", "the input");
  TORCH_CHECK(
      weight.dim() == 1 && weight.size(0) == x.size(1) * 16 && weight.scalar_type() == at::kFloat,
      "detkit blocked_batch_norm: weight of ", weight.sizes(), " ", weight.scalar_type(), " for ",
      x.size(1) * 16, " float32 channels");
  return {x.size(0), x.size(1) * 16, x.size(2), x.size(3), eps, relu};
}

struct BlockedBatchNorm {
  dnnl::batch_normalization_forward::primitive_desc forward_pd;
  dnnl::batch_normalization_forward forward;
  std::optional<dnnl::batch_normalization_backward::primitive_desc> backward_pd;
  std::optional<dnnl::batch_normalization_backward> backward;
  std::once_flag backward_made;
  ShapeKey key;

  // Scale, shift and their gradients: one value per channel (the primitive's "weights").
  memory::desc channels() const { return memory::desc({key.c}, memory::data_type::f32, tag::x); }
  memory::desc data() const { return blocked_desc({key.n, key.c, key.h, key.w}); }
};

std::unique_ptr<BlockedBatchNorm> make_norm(const ShapeKey& k) {
  auto norm = std::make_unique<BlockedBatchNorm>();
  norm->key = k;
  // A remake runs the inference kernel: given statistics, no ReLU mask to keep.
  const auto kind =
      k.given_statistics ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
  dnnl::batch_normalization_forward::desc d(kind, norm->data(), float(k.eps), k.flags());
  norm->forward_pd =
      dnnl::batch_normalization_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
  norm->forward = dnnl::batch_normalization_forward(norm->forward_pd);
  return norm;
}

std::shared_ptr<BlockedBatchNorm> norm_for(const ShapeKey& k, bool backward) {
  static PrimitiveCache<ShapeKey, BlockedBatchNorm> cache(&make_norm);
  auto norm = cache.get(k);
  if (backward) {
    std::call_once(norm->backward_made, [&n = *norm] {
      dnnl::batch_normalization_backward::desc d(dnnl::prop_kind::backward, n.data(), n.data(),
                                                 float(n.key.eps), n.key.flags());
      n.backward_pd = dnnl::batch_normalization_backward::primitive_desc(
          d, user_scratchpad(), cpu_engine(), n.forward_pd);
      n.backward = dnnl::batch_normalization_backward(*n.backward_pd);
    });
  }
  return norm;
}

}  // namespace

at::Tensor blocked_batch_norm_forward(const at::Tensor& x, const at::Tensor& weight,
                                      const at::Tensor& bias, double eps, bool relu,
                                      BatchStatistics& stats) {
  const ShapeKey k = key_of(x, weight, eps, relu);
  const auto norm = norm_for(k, /*backward=*/false);
  const auto& pd = norm->forward_pd;
  at::Tensor y = at::empty_like(x);
  stats.mean = at::empty({k.c}, x.options());
  stats.variance = at::empty({k.c}, x.options());
  Execution e;
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, e.input(x, pd.src_desc(), tag::nChw16c)},
      {DNNL_ARG_SCALE, e.input(weight.contiguous(), norm->channels(), tag::x)},
      {DNNL_ARG_SHIFT, e.input(bias.contiguous(), norm->channels(), tag::x)},
      {DNNL_ARG_DST, e.output(y, pd.dst_desc(), tag::nChw16c)},
      {DNNL_ARG_MEAN, e.output(stats.mean, pd.mean_desc(), tag::x)},
      {DNNL_ARG_VARIANCE, e.output(stats.variance, pd.variance_desc(), tag::x)}};
  if (relu) {
    stats.relu_mask =
        at::empty({int64_t(pd.workspace_desc().get_size())}, x.options().dtype(at::kByte));
    args.emplace(DNNL_ARG_WORKSPACE,
                 memory(pd.workspace_desc(), cpu_engine(), stats.relu_mask.data_ptr()));
  }
  e.run(norm->forward, pd, std::move(args));
  return y;
}

at::Tensor blocked_batch_norm_remake(const at::Tensor& x, const at::Tensor& weight,
                                     const at::Tensor& bias, const BatchStatistics& stats,
                                     double eps, bool relu) {
  ShapeKey k = key_of(x, weight, eps, relu);
  k.given_statistics = true;
  const auto norm = norm_for(k, /*backward=*/false);
  const auto& pd = norm->forward_pd;
  at::Tensor y = at::empty_like(x);
  Execution e;
  e.run(norm->forward, pd,
        {{DNNL_ARG_SRC, e.input(x, pd.src_desc(), tag::nChw16c)},
         {DNNL_ARG_MEAN, e.input(stats.mean, pd.mean_desc(), tag::x)},
         {DNNL_ARG_VARIANCE, e.input(stats.variance, pd.variance_desc(), tag::x)},
         {DNNL_ARG_SCALE, e.input(weight.contiguous(), norm->channels(), tag::x)},
         {DNNL_ARG_SHIFT, e.input(bias.contiguous(), norm->channels(), tag::x)},
         {DNNL_ARG_DST, e.output(y, pd.dst_desc(), tag::nChw16c)}});
  return y;
}

std::array<at::Tensor, 3> blocked_batch_norm_backward(const at::Tensor& grad_output,
                                                      const at::Tensor& x, const at::Tensor& weight,
                                                      const at::Tensor& bias,
                                                      const BatchStatistics& stats, double eps) {
  const ShapeKey k = key_of(x, weight, eps, stats.relu_mask.defined());
  const auto norm = norm_for(k, /*backward=*/true);
  const auto& pd = *norm->backward_pd;
  const at::Tensor grad = grad_output.contiguous();
  at::Tensor grad_x = at::empty_like(x);
  at::Tensor grad_weight = at::empty({k.c}, weight.options());
  at::Tensor grad_bias = at::empty({k.c}, weight.options());
  Execution e;
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, e.input(x, pd.src_desc(), tag::nChw16c)},
      {DNNL_ARG_MEAN, e.input(stats.mean, pd.mean_desc(), tag::x)},
      {DNNL_ARG_VARIANCE, e.input(stats.variance, pd.variance_desc(), tag::x)},
      {DNNL_ARG_DIFF_DST, e.input(grad, pd.diff_dst_desc(), tag::nChw16c)},
      {DNNL_ARG_SCALE, e.input(weight.contiguous(), norm->channels(), tag::x)},
      // oneDNN 2.6 refuses to run the backward pass without the shift, which it does not read
      {DNNL_ARG_SHIFT, e.input(bias.contiguous(), norm->channels(), tag::x)},
      {DNNL_ARG_DIFF_SRC, e.output(grad_x, pd.diff_src_desc(), tag::nChw16c)},
      {DNNL_ARG_DIFF_SCALE, e.output(grad_weight, norm->channels(), tag::x)},
      {DNNL_ARG_DIFF_SHIFT, e.output(grad_bias, norm->channels(), tag::x)}};
  if (k.relu) {
    args.emplace(DNNL_ARG_WORKSPACE,
                 memory(pd.workspace_desc(), cpu_engine(), stats.relu_mask.data_ptr()));
  }
  e.run(*norm->backward, pd, std::move(args));
  return {grad_x, grad_weight, grad_bias};
}

}  // namespace detkit::ops::cpu
