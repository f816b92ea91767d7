#include "detkit/ops/cpu/blocked_affine_kernel.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdint>

#include "detkit/ops/cpu/blocked_layout.h"
#include "detkit/ops/cpu/clones.h"

namespace detkit::ops::cpu {

namespace {

// `pixels` pixels of one 16-channel block: y = x * s + t, then the ReLU. (Two loops, so each
// vectorises without a test per value.)
DETKIT_CLONES void affine_block(const float* __restrict x, const float* __restrict s,
                                const float* __restrict t, float* __restrict y, int64_t pixels,
                                bool relu) {
  if (!relu) {
    for (int64_t p = 0; p < pixels; ++p)
      for (int c = 0; c < 16; ++c) y[p * 16 + c] = x[p * 16 + c] * s[c] + t[c];
    return;
  }
  for (int64_t p = 0; p < pixels; ++p) {
    for (int c = 0; c < 16; ++c) {
      const float v = x[p * 16 + c] * s[c] + t[c];
      // at::relu is clamp_min(0): NaN stays NaN, as it does here (NaN < 0 is false).
      y[p * 16 + c] = v < 0.f ? 0.f : v;
    }
  }
}

// grad_x = grad * s, and 0 where the ReLU's output y was not positive (y unread without it).
DETKIT_CLONES void affine_block_backward(const float* __restrict g, const float* __restrict y,
                                         const float* __restrict s, float* __restrict gx,
                                         int64_t pixels, bool relu) {
  if (!relu) {
    for (int64_t p = 0; p < pixels; ++p)
      for (int c = 0; c < 16; ++c) gx[p * 16 + c] = g[p * 16 + c] * s[c];
    return;
  }
  for (int64_t p = 0; p < pixels; ++p) {
    for (int c = 0; c < 16; ++c) {
      const float v = g[p * 16 + c] * s[c];
      gx[p * 16 + c] = y[p * 16 + c] > 0.f ? v : 0.f;
    }
  }
}

at::Tensor per_channel(const at::Tensor& v, int64_t channels, const char* what) {
  TORCH_CHECK(v.numel() == channels && v.scalar_type() == at::kFloat,
              "detkit blocked_channel_affine: the ", what, " must hold ", channels,
              " float32 values, got ", v.sizes(), " ", v.scalar_type());
  return v.contiguous();
}

}  // namespace

at::Tensor blocked_affine_forward(const at::Tensor& x, const at::Tensor& scale,
                                  const at::Tensor& shift, bool relu) {
  check_blocked_map(x, "blocked_channel_affine", "the input");
  const int64_t blocks_per_image = x.size(1), pixels = x.size(2) * x.size(3);
  // One value per channel, or per image and channel (GroupNorm's).
  const bool per_image = scale.numel() == x.size(0) * blocks_per_image * 16 && x.size(0) > 1;
  const int64_t values = (per_image ? x.size(0) : 1) * blocks_per_image * 16;
  const at::Tensor s = per_channel(scale, values, "scale");
  const at::Tensor t = per_channel(shift, values, "shift");
  at::Tensor y = at::empty_like(x);
  const float* in = x.data_ptr<float>();
  const float* sp = s.data_ptr<float>();
  const float* tp = t.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for_block_pixels(x, [&](int64_t block, int64_t p0, int64_t n) {
    const int64_t offset = (block * pixels + p0) * 16;
    const int64_t c = (per_image ? block : block % blocks_per_image) * 16;
    affine_block(in + offset, sp + c, tp + c, out + offset, n, relu);
  });
  return y;
}

at::Tensor blocked_affine_backward(const at::Tensor& grad, const at::Tensor& y,
                                   const at::Tensor& scale, bool relu) {
  const at::Tensor g = grad.contiguous();
  check_blocked_map(g, "blocked_channel_affine", "the gradient");
  if (relu) {
    check_blocked_map(y, "blocked_channel_affine", "the output");
    TORCH_CHECK(y.sizes() == g.sizes(), "detkit blocked_channel_affine: a gradient of ", g.sizes(),
                " for an output of ", y.sizes());
  }
  const int64_t blocks_per_image = g.size(1), pixels = g.size(2) * g.size(3);
  const at::Tensor s = per_channel(scale, blocks_per_image * 16, "scale");
  at::Tensor grad_x = at::empty_like(g);
  const float* gp = g.data_ptr<float>();
  const float* yp = relu ? y.data_ptr<float>() : nullptr;
  const float* sp = s.data_ptr<float>();
  float* out = grad_x.data_ptr<float>();
  for_block_pixels(g, [&](int64_t block, int64_t p0, int64_t n) {
    const int64_t offset = (block * pixels + p0) * 16, c = (block % blocks_per_image) * 16;
    affine_block_backward(gp + offset, relu ? yp + offset : nullptr, sp + c, out + offset, n, relu);
  });
  return grad_x;
}

}  // namespace detkit::ops::cpu
