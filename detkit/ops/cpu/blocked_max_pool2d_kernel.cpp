// oneDNN's max pooling, forward training and backward, on nChw16c maps (no reorders).
#include "detkit/ops/cpu/blocked_max_pool2d_kernel.h"

#include <ATen/ATen.h>

#include <array>
#include <memory>
#include <mutex>
#include <optional>

#include "detkit/ops/cpu/blocked_layout.h"
#include "detkit/ops/cpu/onednn_execution.h"

namespace detkit::ops::cpu {
namespace {

using dnnl::memory;
using tag = memory::format_tag;

struct ShapeKey {
  int64_t n, c, h, w;
  PoolWindow window;
  std::array<int64_t, 7> values() const {
    return {n, c, h, w, window.kernel, window.stride, window.padding};
  }
};

ShapeKey key_of(at::IntArrayRef sizes, const PoolWindow& window) {
  const ShapeKey k{sizes[0], sizes[1], sizes[2], sizes[3], window};
  TORCH_CHECK(window.kernel >= 1 && window.stride >= 1 && window.padding >= 0 &&
                  2 * window.padding <= window.kernel,
              "detkit blocked_max_pool2d: kernel ", window.kernel, ", stride ", window.stride,
              ", padding ", window.padding,
              " (kernel and stride at least 1, padding at most half the kernel)");
  TORCH_CHECK(window.out_size(k.h) >= 1 && window.out_size(k.w) >= 1,
              "detkit blocked_max_pool2d: a ", k.h, "x", k.w, " map is smaller than the ",
              window.kernel, "x", window.kernel, " window with padding ", window.padding);
  return k;
}

struct BlockedMaxPool {
  ShapeKey key;
  dnnl::pooling_forward::primitive_desc forward_pd;
  dnnl::pooling_forward forward;
  std::optional<dnnl::pooling_backward::primitive_desc> backward_pd;
  std::optional<dnnl::pooling_backward> backward;
  std::once_flag backward_made;

  int64_t out_h() const { return key.window.out_size(key.h); }
  int64_t out_w() const { return key.window.out_size(key.w); }
  memory::desc src() const { return blocked_desc({key.n, key.c, key.h, key.w}); }
  memory::desc dst() const { return blocked_desc({key.n, key.c, out_h(), out_w()}); }
  memory::dims strides() const { return {key.window.stride, key.window.stride}; }
  memory::dims kernel() const { return {key.window.kernel, key.window.kernel}; }
  memory::dims padding_l() const { return {key.window.padding, key.window.padding}; }
  memory::dims padding_r() const {
    const PoolWindow& p = key.window;
    return {far_padding(key.h, out_h(), p.kernel, p.stride, p.padding),
            far_padding(key.w, out_w(), p.kernel, p.stride, p.padding)};
  }
};

std::unique_ptr<BlockedMaxPool> make_pool(const ShapeKey& k) {
  auto pool = std::make_unique<BlockedMaxPool>();
  pool->key = k;
  // Padding is never the maximum: oneDNN's max pooling skips it, as libtorch's pads with -inf.
  dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max,
                                pool->src(), pool->dst(), pool->strides(), pool->kernel(),
                                pool->padding_l(), pool->padding_r());
  pool->forward_pd = dnnl::pooling_forward::primitive_desc(d, user_scratchpad(), cpu_engine());
  pool->forward = dnnl::pooling_forward(pool->forward_pd);
  return pool;
}

std::shared_ptr<BlockedMaxPool> pool_for(const ShapeKey& k, bool backward) {
  static PrimitiveCache<ShapeKey, BlockedMaxPool> cache(&make_pool);
  auto pool = cache.get(k);
  if (backward) {
    std::call_once(pool->backward_made, [&p = *pool] {
      dnnl::pooling_backward::desc d(dnnl::algorithm::pooling_max, p.src(), p.dst(), p.strides(),
                                     p.kernel(), p.padding_l(), p.padding_r());
      p.backward_pd =
          dnnl::pooling_backward::primitive_desc(d, user_scratchpad(), cpu_engine(), p.forward_pd);
      p.backward = dnnl::pooling_backward(*p.backward_pd);
    });
  }
  return pool;
}

}  // namespace

at::Tensor blocked_max_pool2d_forward(const at::Tensor& x, const PoolWindow& window,
                                      at::Tensor& workspace) {
  check_blocked_map(x, "blocked_max_pool2d", "the input");
  const auto pool =
      pool_for(key_of({x.size(0), x.size(1) * 16, x.size(2), x.size(3)}, window), false);
  const auto& pd = pool->forward_pd;
  at::Tensor y = at::empty({x.size(0), x.size(1), pool->out_h(), pool->out_w(), 16}, x.options());
  workspace = at::empty({int64_t(pd.workspace_desc().get_size())}, x.options().dtype(at::kByte));
  Execution e;
  e.run(pool->forward, pd,
        {{DNNL_ARG_SRC, e.input(x, pd.src_desc(), tag::nChw16c)},
         {DNNL_ARG_DST, e.output(y, pd.dst_desc(), tag::nChw16c)},
         {DNNL_ARG_WORKSPACE, memory(pd.workspace_desc(), cpu_engine(), workspace.data_ptr())}});
  return y;
}

at::Tensor blocked_max_pool2d_backward(const at::Tensor& grad_output, at::IntArrayRef sizes,
                                       const PoolWindow& window, const at::Tensor& workspace) {
  const auto pool = pool_for(key_of(sizes, window), true);
  const auto& pd = *pool->backward_pd;
  const at::Tensor grad = grad_output.contiguous();
  check_blocked_map(grad, "blocked_max_pool2d", "the gradient");
  TORCH_CHECK(grad.size(2) == pool->out_h() && grad.size(3) == pool->out_w() &&
                  workspace.numel() == int64_t(pd.workspace_desc().get_size()),
              "detkit blocked_max_pool2d: a gradient of ", grad.sizes(), " for an output of ",
              pool->out_h(), "x", pool->out_w());
  at::Tensor grad_x = at::empty({sizes[0], sizes[1] / 16, sizes[2], sizes[3], 16}, grad.options());
  Execution e;
  e.run(*pool->backward, pd,
        {{DNNL_ARG_DIFF_DST, e.input(grad, pd.diff_dst_desc(), tag::nChw16c)},
         {DNNL_ARG_DIFF_SRC, e.output(grad_x, pd.diff_src_desc(), tag::nChw16c)},
         {DNNL_ARG_WORKSPACE, memory(pd.workspace_desc(), cpu_engine(), workspace.data_ptr())}});
  return grad_x;
}

}  // namespace detkit::ops::cpu
