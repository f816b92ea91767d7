#include "detkit/ops/cpu/blocked_group_norm_kernel.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "detkit/ops/cpu/blocked_affine_kernel.h"
#include "detkit/ops/cpu/blocked_layout.h"
#include "detkit/ops/cpu/clones.h"

namespace detkit::ops::cpu {

namespace {

// Over `pixels` pixels of one 16-channel block: per channel, the sum of x and of x * x.
DETKIT_CLONES void block_moments(const float* __restrict x, int64_t pixels, double* __restrict sum,
                                 double* __restrict squares) {
  double s[16] = {}, q[16] = {};
  for (int64_t p = 0; p < pixels; ++p) {
    for (int c = 0; c < 16; ++c) {
      const double v = x[p * 16 + c];
      s[c] += v;
      q[c] += v * v;
    }
  }
  std::copy(s, s + 16, sum);
  std::copy(q, q + 16, squares);
}

// The output's gradient over `pixels` pixels, zeroed where the ReLU's output y was not positive
// (y unread without it), into g.
DETKIT_CLONES void masked_gradient(const float* __restrict grad, const float* __restrict y,
                                   int64_t pixels, bool relu, float* __restrict g) {
  if (!relu) {
    std::copy(grad, grad + pixels * 16, g);
    return;
  }
  for (int64_t i = 0; i < pixels * 16; ++i) g[i] = y[i] > 0.f ? grad[i] : 0.f;
}

// Per channel, the sum of that gradient g and of g * x. (g in float first, in runs of kRun
// pixels: GCC vectorises neither the select nor the sums when they share a loop.)
DETKIT_CLONES void block_gradient_moments(const float* __restrict grad, const float* __restrict x,
                                          const float* __restrict y, int64_t pixels, bool relu,
                                          double* __restrict sum, double* __restrict products) {
  constexpr int64_t kRun = 64;
  double s[16] = {}, q[16] = {};
  float g[kRun * 16];
  for (int64_t p0 = 0; p0 < pixels; p0 += kRun) {
    const int64_t n = std::min(kRun, pixels - p0);
    masked_gradient(grad + p0 * 16, relu ? y + p0 * 16 : nullptr, n, relu, g);
    const float* xp = x + p0 * 16;
    for (int64_t p = 0; p < n; ++p) {
      for (int c = 0; c < 16; ++c) {
        s[c] += g[p * 16 + c];
        q[c] += double(g[p * 16 + c]) * double(xp[p * 16 + c]);
      }
    }
  }
  std::copy(s, s + 16, sum);
  std::copy(q, q + 16, products);
}

// grad_x = g * a + x * b + c per channel, g as above.
DETKIT_CLONES void block_input_gradient(const float* __restrict grad, const float* __restrict x,
                                        const float* __restrict y, const float* __restrict a,
                                        const float* __restrict b, const float* __restrict c,
                                        float* __restrict grad_x, int64_t pixels, bool relu) {
  if (!relu) {
    for (int64_t p = 0; p < pixels; ++p)
      for (int k = 0; k < 16; ++k)
        grad_x[p * 16 + k] = grad[p * 16 + k] * a[k] + x[p * 16 + k] * b[k] + c[k];
    return;
  }
  for (int64_t p = 0; p < pixels; ++p) {
    for (int k = 0; k < 16; ++k) {
      const float g = y[p * 16 + k] > 0.f ? grad[p * 16 + k] : 0.f;
      grad_x[p * 16 + k] = g * a[k] + x[p * 16 + k] * b[k] + c[k];
    }
  }
}

// A per-channel parameter's C values, as doubles (`absent` each where it is undefined).
std::vector<double> per_channel_or(const at::Tensor& v, int64_t channels, double absent,
                                   const char* what) {
  std::vector<double> out(channels, absent);
  if (!v.defined()) return out;
  TORCH_CHECK(v.numel() == channels && v.scalar_type() == at::kFloat,
              "detkit blocked_group_norm: the ", what, " must hold ", channels,
              " float32 values, got ", v.sizes(), " ", v.scalar_type());
  const at::Tensor c = v.contiguous();
  std::copy(c.data_ptr<float>(), c.data_ptr<float>() + channels, out.begin());
  return out;
}

// The map's channel count after checking that `groups` divides it.
int64_t checked_channels(const at::Tensor& x, int64_t groups) {
  const int64_t channels = x.size(1) * 16;
  TORCH_CHECK(groups > 0 && channels % groups == 0, "detkit blocked_group_norm: ", channels,
              " channels do not split into ", groups, " groups");
  TORCH_CHECK(x.size(2) * x.size(3) > 0, "detkit blocked_group_norm: a map without pixels, ",
              x.sizes());
  return channels;
}

// Runs fn(block) over every (image, 16-channel block) of x, in parallel.
template <typename Fn>
void for_each_block(const at::Tensor& x, const Fn& fn) {
  at::parallel_for(0, x.size(0) * x.size(1), 1, [&](int64_t begin, int64_t end) {
    for (int64_t block = begin; block < end; ++block) fn(block);
  });
}

}  // namespace

at::Tensor blocked_group_norm_forward(const at::Tensor& x, int64_t groups, const at::Tensor& weight,
                                      const at::Tensor& bias, double eps, bool relu,
                                      GroupStatistics& stats) {
  check_blocked_map(x, "blocked_group_norm", "the input");
  const int64_t images = x.size(0), channels = checked_channels(x, groups);
  const int64_t pixels = x.size(2) * x.size(3), per_group = channels / groups;
  const std::vector<double> w = per_channel_or(weight, channels, 1.0, "weight");
  const std::vector<double> b = per_channel_or(bias, channels, 0.0, "bias");
  std::vector<double> sum(images * channels), squares(images * channels);
  const float* in = x.data_ptr<float>();
  for_each_block(x, [&](int64_t block) {
    block_moments(in + block * pixels * 16, pixels, &sum[block * 16], &squares[block * 16]);
  });
  stats.mean = at::empty({images, groups}, x.options());
  stats.rstd = at::empty({images, groups}, x.options());
  at::Tensor scale = at::empty({images * channels}, x.options());
  at::Tensor shift = at::empty({images * channels}, x.options());
  float* mean = stats.mean.data_ptr<float>();
  float* rstd = stats.rstd.data_ptr<float>();
  float* s = scale.data_ptr<float>();
  float* t = shift.data_ptr<float>();
  const double count = double(per_group) * double(pixels);
  for (int64_t n = 0; n < images; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t first = n * channels + g * per_group;
      double total = 0, total_squares = 0;
      for (int64_t c = first; c < first + per_group; ++c) {
        total += sum[c];
        total_squares += squares[c];
      }
      const double m = total / count;
      const double r = 1.0 / std::sqrt(std::max(total_squares / count - m * m, 0.0) + eps);
      mean[n * groups + g] = static_cast<float>(m);
      rstd[n * groups + g] = static_cast<float>(r);
      for (int64_t c = first; c < first + per_group; ++c) {
        const double a = r * w[c - n * channels];
        s[c] = static_cast<float>(a);
        t[c] = static_cast<float>(b[c - n * channels] - m * a);
      }
    }
  }
  return blocked_affine_forward(x, scale, shift, relu);
}

std::array<at::Tensor, 3> blocked_group_norm_backward(const at::Tensor& grad_output,
                                                      const at::Tensor& x, const at::Tensor& y,
                                                      int64_t groups, const at::Tensor& weight,
                                                      const GroupStatistics& stats, bool relu) {
  const at::Tensor grad = grad_output.contiguous();
  check_blocked_map(grad, "blocked_group_norm", "the gradient");
  check_blocked_map(x, "blocked_group_norm", "the input");
  TORCH_CHECK(grad.sizes() == x.sizes(), "detkit blocked_group_norm: a gradient of ",
              grad.sizes(), " for an input of ", x.sizes());
  if (relu) {
    check_blocked_map(y, "blocked_group_norm", "the output");
    TORCH_CHECK(y.sizes() == x.sizes(), "detkit blocked_group_norm: an output of ", y.sizes(),
                " for an input of ", x.sizes());
  }
  const int64_t images = x.size(0), channels = checked_channels(x, groups);
  const int64_t pixels = x.size(2) * x.size(3), per_group = channels / groups;
  TORCH_CHECK(stats.mean.numel() == images * groups && stats.rstd.numel() == images * groups,
              "detkit blocked_group_norm: statistics for ", images, " x ", groups,
              " groups needed");
  const std::vector<double> w = per_channel_or(weight, channels, 1.0, "weight");
  const float* gp = grad.data_ptr<float>();
  const float* xp = x.data_ptr<float>();
  const float* yp = relu ? y.data_ptr<float>() : nullptr;
  std::vector<double> sum(images * channels), products(images * channels);
  for_each_block(x, [&](int64_t block) {
    const int64_t offset = block * pixels * 16;
    block_gradient_moments(gp + offset, xp + offset, relu ? yp + offset : nullptr, pixels, relu,
                           &sum[block * 16], &products[block * 16]);
  });
  // d/dx of (x - mean) * rstd * w + b summed against g, through the group's mean and rstd:
  // g * w * rstd + x * k + (-k * mean - rstd / count * sum_c w g), k = (sum_c w g * mean -
  // sum_c w g x) * rstd^3 / count.
  at::Tensor a = at::empty({images * channels}, x.options());
  at::Tensor k = at::empty({images * channels}, x.options());
  at::Tensor c0 = at::empty({images * channels}, x.options());
  float* ap = a.data_ptr<float>();
  float* kp = k.data_ptr<float>();
  float* cp = c0.data_ptr<float>();
  std::vector<double> grad_w(channels, 0.0), grad_b(channels, 0.0);
  const at::Tensor mean_values = stats.mean.contiguous(), rstd_values = stats.rstd.contiguous();
  const float* mean = mean_values.data_ptr<float>();
  const float* rstd = rstd_values.data_ptr<float>();
  const double count = double(per_group) * double(pixels);
  for (int64_t n = 0; n < images; ++n) {
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t first = n * channels + g * per_group;
      const double m = mean[n * groups + g], r = rstd[n * groups + g];
      double wg = 0, wgx = 0;
      for (int64_t c = first; c < first + per_group; ++c) {
        wg += w[c - n * channels] * sum[c];
        wgx += w[c - n * channels] * products[c];
        grad_w[c - n * channels] += (products[c] - m * sum[c]) * r;
        grad_b[c - n * channels] += sum[c];
      }
      const double kk = (wg * m - wgx) * r * r * r / count;
      const double cc = -kk * m - wg * r / count;
      for (int64_t c = first; c < first + per_group; ++c) {
        ap[c] = static_cast<float>(w[c - n * channels] * r);
        kp[c] = static_cast<float>(kk);
        cp[c] = static_cast<float>(cc);
      }
    }
  }
  at::Tensor grad_x = at::empty_like(x);
  float* out = grad_x.data_ptr<float>();
  for_block_pixels(x, [&](int64_t block, int64_t p0, int64_t n) {
    const int64_t offset = (block * pixels + p0) * 16;
    block_input_gradient(gp + offset, xp + offset, relu ? yp + offset : nullptr, ap + block * 16,
                         kp + block * 16, cp + block * 16, out + offset, n, relu);
  });
  if (!weight.defined()) return {grad_x, at::Tensor(), at::Tensor()};
  const at::TensorOptions doubles = x.options().dtype(at::kDouble);
  return {grad_x, at::from_blob(grad_w.data(), {channels}, doubles).to(at::kFloat),
          at::from_blob(grad_b.data(), {channels}, doubles).to(at::kFloat)};
}

}  // namespace detkit::ops::cpu
