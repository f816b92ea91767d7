// detkit::ops::roi_align: the parallel kernels against a plain loop, edge cases, a
// finite-difference gradient check, autograd, and parity with torchvision.ops.roi_align.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "detkit/ops/roi_align.h"
#include "tests/parity/oracle.h"
#include "tests/support/c10_error_of.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::max_abs_diff;

namespace detkit::ops {
namespace {

struct Settings {
  double scale;
  int64_t ph, pw, ratio;
  bool aligned;
};

std::string describe(const Settings& s) {
  return "aligned=" + std::to_string(s.aligned) + " sampling_ratio=" + std::to_string(s.ratio);
}

at::Tensor run(const at::Tensor& x, const at::Tensor& rois, const Settings& s) {
  return roi_align(x, rois, s.scale, s.ph, s.pw, s.ratio, s.aligned);
}

at::Tensor run_backward(const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& x,
                        const Settings& s) {
  return roi_align_backward(grad, rois, s.scale, s.ph, s.pw, x.size(0), x.size(1), x.size(2),
                            x.size(3), s.ratio, s.aligned);
}

// ---- Plain reference: one output element at a time, straight from the definition. ----

// Bilinear weights of the four neighbours of (y, x) in an h x w map; false when outside.
bool neighbours(int64_t h, int64_t w, double y, double x, int64_t idx[4], double wt[4]) {
  if (y < -1.0 || y > h || x < -1.0 || x > w) return false;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x);
  int64_t y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= h - 1) y0 = y1 = h - 1, y = static_cast<double>(y0);
  if (x0 >= w - 1) x0 = x1 = w - 1, x = static_cast<double>(x0);
  const double ly = y - y0, lx = x - x0;
  idx[0] = y0 * w + x0, idx[1] = y0 * w + x1, idx[2] = y1 * w + x0, idx[3] = y1 * w + x1;
  wt[0] = (1 - ly) * (1 - lx), wt[1] = (1 - ly) * lx, wt[2] = ly * (1 - lx), wt[3] = ly * lx;
  return true;
}

// Calls visit(plane offset, weight) for every neighbour of every sample of output bin
// (k, c, ph, pw), with the weight already divided by the sample count.
// rois_d: the rois in double.
template <typename Visit>
void for_each_tap(const at::Tensor& x, const at::Tensor& rois_d, const Settings& s, int64_t k,
                  int64_t c, int64_t ph, int64_t pw, Visit visit) {
  const int64_t C = x.size(1), H = x.size(2), W = x.size(3);
  auto r = rois_d.accessor<double, 2>();
  const double off = s.aligned ? 0.5 : 0.0;
  const double x1 = r[k][1] * s.scale - off, y1 = r[k][2] * s.scale - off;
  double rw = r[k][3] * s.scale - off - x1, rh = r[k][4] * s.scale - off - y1;
  if (!s.aligned) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
  const double bh = rh / s.ph, bw = rw / s.pw;
  const int64_t gh = s.ratio > 0 ? s.ratio : static_cast<int64_t>(std::ceil(rh / s.ph));
  const int64_t gw = s.ratio > 0 ? s.ratio : static_cast<int64_t>(std::ceil(rw / s.pw));
  const double count = std::max<int64_t>(gh * gw, 1);
  const int64_t base = (static_cast<int64_t>(r[k][0]) * C + c) * H * W;
  for (int64_t iy = 0; iy < gh; ++iy) {
    for (int64_t ix = 0; ix < gw; ++ix) {
      const double y = y1 + ph * bh + (iy + 0.5) * bh / gh;
      const double xx = x1 + pw * bw + (ix + 0.5) * bw / gw;
      int64_t idx[4];
      double wt[4];
      if (!neighbours(H, W, y, xx, idx, wt)) continue;
      for (int q = 0; q < 4; ++q) visit(base + idx[q], wt[q] / count);
    }
  }
}

at::Tensor reference_forward(const at::Tensor& x, const at::Tensor& rois, const Settings& s) {
  const at::Tensor xd = x.to(at::kDouble).contiguous();
  const double* in = xd.data_ptr<double>();
  at::Tensor out = at::zeros({rois.size(0), x.size(1), s.ph, s.pw}, xd.options());
  auto o = out.accessor<double, 4>();
  const at::Tensor rois_d = rois.to(at::kDouble);
  for (int64_t k = 0; k < rois.size(0); ++k)
    for (int64_t c = 0; c < x.size(1); ++c)
      for (int64_t ph = 0; ph < s.ph; ++ph)
        for (int64_t pw = 0; pw < s.pw; ++pw)
          for_each_tap(x, rois_d, s, k, c, ph, pw,
                       [&](int64_t i, double w) { o[k][c][ph][pw] += w * in[i]; });
  return out;
}

at::Tensor reference_backward(const at::Tensor& grad, const at::Tensor& rois, const at::Tensor& x,
                              const Settings& s) {
  const at::Tensor g = grad.to(at::kDouble);
  auto ga = g.accessor<double, 4>();
  at::Tensor gin = at::zeros(x.sizes(), g.options());
  double* gi = gin.data_ptr<double>();
  const at::Tensor rois_d = rois.to(at::kDouble);
  for (int64_t k = 0; k < rois.size(0); ++k)
    for (int64_t c = 0; c < x.size(1); ++c)
      for (int64_t ph = 0; ph < s.ph; ++ph)
        for (int64_t pw = 0; pw < s.pw; ++pw)
          for_each_tap(x, rois_d, s, k, c, ph, pw,
                       [&](int64_t i, double w) { gi[i] += w * ga[k][c][ph][pw]; });
  return gin;
}

// ---- Inputs. ----

// Boxes in image coordinates of an image `size` pixels square (feature map = size * scale):
// inside, straddling the border, fully outside, thinner than a pixel, and inverted.
at::Tensor mixed_rois(int64_t batch, double size, int64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<float> v;
  auto add = [&](float b, float x1, float y1, float x2, float y2) {
    v.insert(v.end(), {b, x1, y1, x2, y2});
  };
  const at::Tensor u = at::rand({24, 4}, gen);
  auto U = u.accessor<float, 2>();
  const float S = static_cast<float>(size);
  for (int i = 0; i < 12; ++i) {  // inside
    const float x1 = U[i][0] * 0.7f * S, y1 = U[i][1] * 0.7f * S;
    add(i % batch, x1, y1, x1 + 1 + U[i][2] * 0.3f * S, y1 + 1 + U[i][3] * 0.3f * S);
  }
  for (int i = 12; i < 18; ++i) {  // partly outside
    add(i % batch, -0.3f * S * U[i][0], 0.5f * S * U[i][1], S * (0.6f + U[i][2]),
        S * (1.1f + 0.2f * U[i][3]));
  }
  add(0, 1.2f * S, 1.1f * S, 1.5f * S, 1.6f * S);                // fully outside
  add(batch - 1, -0.9f * S, -0.8f * S, -0.3f * S, -0.2f * S);    // fully outside
  add(0, 0.3f * S, 0.3f * S, 0.3f * S + 0.4f, 0.3f * S + 0.2f);  // sub-pixel
  add(batch - 1, 0.5f * S, 0.4f * S, 0.5f * S, 0.6f * S);        // zero width
  add(0, 0.6f * S, 0.6f * S, 0.4f * S, 0.5f * S);                // inverted
  add(batch - 1, 0, 0, S, S);                                    // whole image
  return at::tensor(v).view({-1, 5});
}

const Settings kSettings[] = {{0.25, 7, 5, 0, false}, {0.25, 7, 5, 1, false},
                              {0.25, 7, 5, 2, false}, {0.25, 7, 5, 0, true},
                              {0.25, 7, 5, 1, true},  {0.25, 7, 5, 2, true}};

// ---- Kernel against the plain loop. ----

TEST(RoiAlign, ForwardAndBackwardMatchPlainLoop) {
  at::set_num_threads(4);
  const at::Tensor x = at::randn({2, 6, 16, 20}, at::make_generator<at::CPUGeneratorImpl>(1));
  const at::Tensor rois = mixed_rois(2, 72, 2);
  // Double: the same arithmetic as the loop up to rounding. Float: relative to the magnitude.
  for (at::ScalarType dtype : {at::kDouble, at::kFloat}) {
    const at::Tensor xt = x.to(dtype), rt = rois.to(dtype);
    const double tolerance = dtype == at::kDouble ? 1e-12 : 1e-5;
    for (const Settings& s : kSettings) {
      const at::Tensor out = run(xt, rt, s);
      ASSERT_EQ(out.sizes(), at::IntArrayRef({rois.size(0), 6, 7, 5}));
      ASSERT_EQ(out.scalar_type(), dtype);
      const at::Tensor want = reference_forward(xt, rt, s);
      const double fwd = max_abs_diff(out, want) / std::max(1.0, want.abs().max().item<double>());
      const at::Tensor grad =
          at::randn(out.sizes(), at::make_generator<at::CPUGeneratorImpl>(3)).to(dtype);
      const at::Tensor want_grad = reference_backward(grad, rt, xt, s);
      const double bwd = max_abs_diff(run_backward(grad, rt, xt, s), want_grad) /
                         std::max(1.0, want_grad.abs().max().item<double>());
      std::cout << "roi_align " << at::toString(dtype) << " vs plain loop, " << describe(s)
                << ": forward max |diff| " << fwd << ", backward max |diff| " << bwd
                << " (relative to max(1, max |value|))\n";
      EXPECT_LT(fwd, tolerance) << describe(s);
      EXPECT_LT(bwd, tolerance) << describe(s);
    }
  }
}

TEST(RoiAlign, ResultDoesNotDependOnThreadCount) {
  const at::Tensor x = at::randn({3, 5, 12, 9}, at::make_generator<at::CPUGeneratorImpl>(4));
  at::Tensor rois = mixed_rois(3, 40, 5);
  rois = at::cat({rois, rois, rois});  // many rois per image: backward accumulates heavily
  for (const Settings& s : kSettings) {
    const at::Tensor grad = at::randn({rois.size(0), 5, s.ph, s.pw});
    at::set_num_threads(1);
    const at::Tensor out1 = run(x, rois, s), gin1 = run_backward(grad, rois, x, s);
    at::set_num_threads(4);
    const at::Tensor out4 = run(x, rois, s), gin4 = run_backward(grad, rois, x, s);
    EXPECT_TRUE(at::equal(out1, out4)) << describe(s);
    EXPECT_TRUE(at::equal(gin1, gin4)) << describe(s);
  }
}

TEST(RoiAlign, MapsWiderThanATileAndAnyInputLayoutGiveTheSameResult) {
  // 40 channels and 37 x 33 pixels: the kernels' layout changes run over full and partial tiles
  // and pixel ranges. The input as stored channels-last and as a strided view gives the same bits.
  at::set_num_threads(2);
  const at::Tensor x =
      at::randn({2, 40, 37, 33}, at::make_generator<at::CPUGeneratorImpl>(6)).to(at::kDouble);
  const at::Tensor rois = mixed_rois(2, 132, 7).to(at::kDouble);
  const at::Tensor wide = at::zeros({2, 40, 37, 35}, x.options());
  wide.narrow(3, 1, 33).copy_(x);
  for (const Settings& s : kSettings) {
    const at::Tensor out = run(x, rois, s);
    EXPECT_LT(max_abs_diff(out, reference_forward(x, rois, s)), 1e-12) << describe(s);
    EXPECT_TRUE(at::equal(run(x.contiguous(at::MemoryFormat::ChannelsLast), rois, s), out))
        << describe(s);
    EXPECT_TRUE(at::equal(run(wide.narrow(3, 1, 33), rois, s), out)) << describe(s);
    const at::Tensor grad =
        at::randn(out.sizes(), at::make_generator<at::CPUGeneratorImpl>(8)).to(at::kDouble);
    const at::Tensor gin = run_backward(grad, rois, x, s);
    EXPECT_TRUE(gin.is_contiguous());
    EXPECT_LT(max_abs_diff(gin, reference_backward(grad, rois, x, s)), 1e-12) << describe(s);
  }
}

// ---- Edge cases. ----

TEST(RoiAlign, EmptyRoisGiveEmptyOutputAndZeroGradient) {
  const at::Tensor x = at::randn({2, 3, 8, 8}).requires_grad_(true);
  const at::Tensor rois = at::zeros({0, 5});
  const at::Tensor out = roi_align(x, rois, 1.0, 7, 7, 2, true);
  EXPECT_EQ(out.sizes(), at::IntArrayRef({0, 3, 7, 7}));
  out.sum().backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().abs().sum().item<float>(), 0.0f);
}

TEST(RoiAlign, OnePixelMapReturnsThePixel) {
  // Every sample of a box within the single pixel's extent reads that pixel.
  const at::Tensor x = at::full({1, 2, 1, 1}, 3.0f);
  x.select(1, 1).fill_(-2.0f);
  const at::Tensor rois = at::tensor({0.0f, 0.0f, 0.0f, 1.0f, 1.0f}).view({1, 5});
  for (int64_t ratio : {0, 1, 2}) {
    const at::Tensor out = roi_align(x, rois, 1.0, 2, 2, ratio, false);
    EXPECT_TRUE(at::allclose(out.select(1, 0), at::full({1, 2, 2}, 3.0f))) << ratio;
    EXPECT_TRUE(at::allclose(out.select(1, 1), at::full({1, 2, 2}, -2.0f))) << ratio;
  }
}

TEST(RoiAlign, BoxFullyOutsideGivesZerosAndNoGradient) {
  const at::Tensor x = at::randn({1, 4, 10, 10});
  const at::Tensor rois =
      at::tensor({0.0f, 30.0f, 30.0f, 40.0f, 45.0f, 0.0f, -20.0f, -9.0f, -12.0f, -3.0f})
          .view({2, 5});
  for (bool aligned : {false, true}) {
    const at::Tensor out = roi_align(x, rois, 1.0, 3, 3, 2, aligned);
    EXPECT_EQ(out.abs().max().item<float>(), 0.0f);
    const at::Tensor gin =
        roi_align_backward(at::ones_like(out), rois, 1.0, 3, 3, 1, 4, 10, 10, 2, aligned);
    EXPECT_EQ(gin.abs().max().item<float>(), 0.0f);
  }
}

TEST(RoiAlign, RejectsBadInput) {
  const at::Tensor x = at::randn({2, 3, 8, 8});
  const at::Tensor good = at::tensor({1.0f, 0.0f, 0.0f, 4.0f, 4.0f}).view({1, 5});
  EXPECT_NE(testing::c10_error_of([&] {
              roi_align(x, at::zeros({3, 4}), 1, 2, 2, 0, true);
            }).find("[3, 4]"),
            std::string::npos);
  EXPECT_NE(
      testing::c10_error_of([&] { roi_align(x[0], good, 1, 2, 2, 0, true); }).find("[3, 8, 8]"),
      std::string::npos);
  const at::Tensor bad_batch = at::tensor({2.0f, 0.0f, 0.0f, 4.0f, 4.0f}).view({1, 5});
  EXPECT_NE(testing::c10_error_of([&] {
              roi_align(x, bad_batch, 1, 2, 2, 0, true);
            }).find("batch index 2"),
            std::string::npos);
  EXPECT_NE(testing::c10_error_of([&] {
              roi_align(x, good.to(at::kDouble), 1, 2, 2, 0, true);
            }).find("Double"),
            std::string::npos);
  EXPECT_NE(testing::c10_error_of([&] { roi_align(x, good, 1, 0, 2, 0, true); }).find("0x2"),
            std::string::npos);
  EXPECT_NE(testing::c10_error_of([&] { roi_align(x, good, 1, 2, 2, -1, true); }).find("-1"),
            std::string::npos);
}

// ---- Gradient. ----

TEST(RoiAlign, BackwardMatchesFiniteDifferencesInDouble) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  const at::Tensor x = at::randn({2, 2, 6, 7}, gen).to(at::kDouble);
  const at::Tensor rois = mixed_rois(2, 24, 8).to(at::kDouble);
  const double eps = 1e-6;
  for (const Settings& base : kSettings) {
    const Settings s{0.25, 3, 2, base.ratio, base.aligned};
    const at::Tensor v = at::randn({rois.size(0), 2, 3, 2}, gen).to(at::kDouble);
    const at::Tensor analytic = run_backward(v, rois, x, s);
    double worst = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      at::Tensor plus = x.clone(), minus = x.clone();
      plus.view(-1)[i] += eps;
      minus.view(-1)[i] -= eps;
      const double numeric =
          ((run(plus, rois, s) - run(minus, rois, s)) * v).sum().item<double>() / (2 * eps);
      worst = std::max(worst, std::abs(numeric - analytic.view(-1)[i].item<double>()));
    }
    std::cout << "roi_align gradcheck, " << describe(s) << ": max |analytic - numeric| " << worst
              << "\n";
    EXPECT_LT(worst, 1e-6) << describe(s);
  }
}

TEST(RoiAlign, AutogradReachesTheInput) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(9);
  const at::Tensor x = at::randn({2, 3, 10, 10}, gen).requires_grad_(true);
  const at::Tensor rois = mixed_rois(2, 40, 10);
  const at::Tensor y = roi_align(x * 2, rois, 0.25, 4, 4, 2, true);
  ASSERT_TRUE(y.requires_grad());
  const at::Tensor v = at::randn(y.sizes(), gen);
  (y * v).sum().backward();
  ASSERT_TRUE(x.grad().defined());
  const at::Tensor expected = 2 * roi_align_backward(v, rois, 0.25, 4, 4, 2, 3, 10, 10, 2, true);
  EXPECT_TRUE(at::allclose(x.grad(), expected));
  EXPECT_GT(x.grad().abs().sum().item<float>(), 0.0f);
}

TEST(RoiAlign, DoubleBackwardIsRefused) {
  const at::Tensor x = at::randn({1, 1, 5, 5}).requires_grad_(true);
  const at::Tensor rois = at::tensor({0.0f, 0.0f, 0.0f, 4.0f, 4.0f}).view({1, 5});
  const at::Tensor y = roi_align(x, rois, 1.0, 2, 2, 2, false);
  const auto grads = torch::autograd::grad({y.pow(2).sum()}, {x}, {}, true, true);
  EXPECT_THROW(grads[0].sum().backward(), c10::Error);
}

// ---- Parity with torchvision. ----

TEST(RoiAlignParity, MatchesTorchvision) {
  DETKIT_REQUIRE_ORACLE();
  at::set_num_threads(2);
  auto gen = at::make_generator<at::CPUGeneratorImpl>(11);
  // 67 channels: each of the 2 threads' channel blocks (34 and 33) runs the kernels' vector loops
  // (16 floats with AVX-512) and their remainders.
  const int64_t channels = 67;
  const at::Tensor x = at::randn({2, channels, 25, 30}, gen);
  const at::Tensor rois = mixed_rois(2, 110, 12);
  // Every setting with the mixed boxes, plus the empty box set once per aligned mode.
  struct Case {
    Settings s;
    at::Tensor rois, grad;
  };
  std::vector<Case> cases;
  for (const Settings& s : kSettings) {
    for (bool empty : {false, true}) {
      if (empty && s.ratio != 2) continue;
      const at::Tensor r = empty ? rois.slice(0, 0, 0) : rois;
      cases.push_back({s, r, at::randn({r.size(0), channels, s.ph, s.pw}, gen)});
    }
  }
  detkit::testing::TensorMap inputs{{"input", x}};
  for (size_t k = 0; k < cases.size(); ++k) {
    const Settings& s = cases[k].s;
    const std::string id = "#" + std::to_string(k);
    inputs["rois" + id] = cases[k].rois;
    inputs["grad_output" + id] = cases[k].grad;
    inputs["params" + id] =
        at::tensor({s.scale, double(s.ph), double(s.pw), double(s.ratio), double(s.aligned)});
  }
  const auto want = detkit::testing::run_oracle("oracle_ops.py", "roi_align", inputs);
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& [s, r, grad] = cases[k];
    const std::string id = "#" + std::to_string(k);
    const at::Tensor out = run(x, r, s);
    ASSERT_EQ(out.sizes(), want.at("output" + id).sizes());
    const double fwd = max_abs_diff(out, want.at("output" + id));
    const double bwd = max_abs_diff(run_backward(grad, r, x, s), want.at("grad_input" + id));
    std::cout << "roi_align vs torchvision, " << describe(s) << (r.size(0) ? "" : " (no boxes)")
              << ": forward max |diff| " << fwd << ", input-gradient max |diff| " << bwd << "\n";
    EXPECT_EQ(fwd, 0.0) << describe(s);  // same expression, same order: bit-identical
    EXPECT_EQ(bwd, 0.0) << describe(s);
  }
}

}  // namespace
}  // namespace detkit::ops
