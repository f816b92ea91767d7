// detkit::ops::patchwise_conv_transpose2d: a transposed convolution whose stride equals its kernel
// as one matrix product, against float64 at::conv_transpose2d next to float32
// at::conv_transpose2d's own distance from it, its gradients likewise, and when it applies
// (layers/test_conv_transpose2d.cpp: where layers::conv_transpose2d runs it).
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "detkit/ops/cpu/patchwise_conv_transpose2d_kernel.h"
#include "detkit/ops/patchwise_conv_transpose2d.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::relative_error;

namespace detkit::ops {
namespace {

bool applies(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, at::IntArrayRef stride,
             at::IntArrayRef padding = {0, 0}, at::IntArrayRef output_padding = {0, 0},
             at::IntArrayRef dilation = {1, 1}, int64_t groups = 1) {
  return patchwise_conv_transpose2d_applies(x, w, b, stride, padding, output_padding, dilation,
                                            groups);
}

TEST(PatchwiseConvTranspose2d, AgreesWithConvTranspose2dWithinFloat32Rounding) {
  torch::manual_seed(0);
  struct Case {
    int64_t n, c, o, h, w, kh, kw;
    bool bias, channels_last;
  };
  // The mask head's upsampling (32 detections, Detectron2's 256 channels; the demo's 128 with
  // channels-last maps), a 3x3 stride 3 and a rectangular 2x3 kernel, odd channel counts.
  const Case cases[] = {{32, 256, 256, 14, 14, 2, 2, true, false},
                        {7, 128, 128, 14, 14, 2, 2, true, true},
                        {3, 5, 7, 4, 6, 3, 3, false, false},
                        {2, 9, 4, 5, 3, 2, 3, true, true}};
  for (const Case& k : cases) {
    at::Tensor x = torch::randn({k.n, k.c, k.h, k.w});
    if (k.channels_last) x = x.contiguous(at::MemoryFormat::ChannelsLast);
    const at::Tensor w = torch::randn({k.c, k.o, k.kh, k.kw}) / std::sqrt(double(k.c));
    const at::Tensor b = k.bias ? torch::randn({k.o}) : at::Tensor();
    ASSERT_TRUE(applies(x, w, b, {k.kh, k.kw}));
    const at::Tensor exact =
        at::conv_transpose2d(x.to(at::kDouble), w.to(at::kDouble),
                             k.bias ? b.to(at::kDouble) : at::Tensor(), {k.kh, k.kw});
    const at::Tensor ours = patchwise_conv_transpose2d(x, w, b);
    const at::Tensor libtorch = at::conv_transpose2d(x, w, b, {k.kh, k.kw});
    ASSERT_EQ(ours.sizes(), exact.sizes());
    EXPECT_TRUE(ours.is_contiguous(at::MemoryFormat::ChannelsLast));
    EXPECT_EQ(ours.scalar_type(), at::kFloat);
    const double error = relative_error(ours, exact), theirs = relative_error(libtorch, exact);
    std::cout << "(" << k.n << ", " << k.c << ", " << k.h << ", " << k.w << ") -> " << k.o
              << " channels, kernel " << k.kh << "x" << k.kw << ": max difference from float64 "
              << error << " of the largest value (at::conv_transpose2d float32: " << theirs
              << ")\n";
    EXPECT_LT(error, 1e-5);
    EXPECT_LT(error, 10 * theirs + 1e-7);
    // float64 in, float64 out, as at::conv_transpose2d.
    const at::Tensor doubles = patchwise_conv_transpose2d(
        x.to(at::kDouble), w.to(at::kDouble), k.bias ? b.to(at::kDouble) : at::Tensor());
    EXPECT_LT(relative_error(doubles, exact), 1e-12);
  }
}

// The gradients of the input, weight and bias, for grad_output in either memory format, against
// float64 at::conv_transpose2d's autograd, next to float32 at::conv_transpose2d's distance.
TEST(PatchwiseConvTranspose2d, GradientsAgreeWithConvTranspose2dWithinFloat32Rounding) {
  torch::manual_seed(3);
  struct Case {
    int64_t n, c, o, h, w, kh, kw;
    bool bias, channels_last_grad;
  };
  const Case cases[] = {{24, 128, 128, 14, 14, 2, 2, true, true},  // the demo's mask head
                        {5, 64, 32, 14, 14, 2, 2, true, false},
                        {3, 5, 7, 4, 6, 3, 3, false, false},
                        {2, 9, 4, 5, 3, 2, 3, true, true}};
  for (const Case& k : cases) {
    const at::Tensor x = torch::randn({k.n, k.c, k.h, k.w});
    const at::Tensor w = torch::randn({k.c, k.o, k.kh, k.kw}) / std::sqrt(double(k.c));
    const at::Tensor b = k.bias ? torch::randn({k.o}) : at::Tensor();
    at::Tensor g = torch::randn({k.n, k.o, k.h * k.kh, k.w * k.kw});
    if (k.channels_last_grad) g = g.contiguous(at::MemoryFormat::ChannelsLast);
    // Gradients of (input, weight, bias) of `conv` at x, w, b converted to `type`.
    auto gradients = [&](at::ScalarType type, auto conv) {
      auto leaf = [type](const at::Tensor& t) { return t.to(type).clone().requires_grad_(); };
      std::vector<at::Tensor> leaves = {leaf(x), leaf(w)};
      if (k.bias) leaves.push_back(leaf(b));
      const at::Tensor out = conv(leaves[0], leaves[1], k.bias ? leaves[2] : at::Tensor());
      out.backward(g.to(type));
      std::vector<at::Tensor> grads;
      for (const auto& t : leaves) grads.push_back(t.grad());
      return grads;
    };
    auto libtorch_conv = [&](const at::Tensor& xi, const at::Tensor& wi, const at::Tensor& bi) {
      return at::conv_transpose2d(xi, wi, bi, {k.kh, k.kw});
    };
    const auto exact = gradients(at::kDouble, libtorch_conv);
    const auto libtorch = gradients(at::kFloat, libtorch_conv);
    const auto ours =
        gradients(at::kFloat, [](const at::Tensor& xi, const at::Tensor& wi, const at::Tensor& bi) {
          return patchwise_conv_transpose2d(xi, wi, bi);
        });
    const char* names[] = {"input", "weight", "bias"};
    for (size_t i = 0; i < exact.size(); ++i) {
      ASSERT_TRUE(ours[i].defined()) << names[i];
      ASSERT_EQ(ours[i].sizes(), exact[i].sizes()) << names[i];
      const double error = relative_error(ours[i], exact[i]);
      const double theirs = relative_error(libtorch[i], exact[i]);
      std::cout << "(" << k.n << ", " << k.c << ", " << k.h << ", " << k.w << ") -> " << k.o
                << " channels, kernel " << k.kh << "x" << k.kw << ", grad_output "
                << (k.channels_last_grad ? "channels-last" : "NCHW") << ": " << names[i]
                << " gradient's max difference from float64 " << error
                << " of the largest value (at::conv_transpose2d float32: " << theirs << ")\n";
      EXPECT_LT(error, 1e-5) << names[i];
      EXPECT_LT(error, 10 * theirs + 1e-7) << names[i];
    }
    EXPECT_TRUE(ours[0].is_contiguous());  // the input's memory format
  }
}

// Only the gradients asked for are computed (autograd's needs_input_grad, passed as `needed`);
// a channels-last input gets a channels-last gradient.
TEST(PatchwiseConvTranspose2d, GradientsFollowWhatAutogradAsksFor) {
  const at::Tensor x = torch::randn({2, 8, 5, 5}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor w = torch::randn({8, 4, 2, 2});
  const at::Tensor g = torch::randn({2, 4, 10, 10});
  const auto weight_only =
      cpu::patchwise_conv_transpose2d_backward(g, x, w, /*with_bias=*/true, {false, true, false});
  EXPECT_FALSE(weight_only.input.defined());
  ASSERT_TRUE(weight_only.weight.defined());
  EXPECT_FALSE(weight_only.bias.defined());
  const auto all = cpu::patchwise_conv_transpose2d_backward(g, x, w, true, {true, true, true});
  EXPECT_TRUE(all.weight.equal(weight_only.weight));
  ASSERT_TRUE(all.bias.defined());
  EXPECT_LT(relative_error(all.bias, g.sum({0, 2, 3})), 1e-6);
  EXPECT_TRUE(all.input.is_contiguous(at::MemoryFormat::ChannelsLast));
  // Through autograd: the bias is not a leaf that wants a gradient, the input and weight are.
  const at::Tensor xg = x.clone().requires_grad_(), wg = w.clone().requires_grad_();
  patchwise_conv_transpose2d(xg, wg, torch::randn({4})).backward(g);
  ASSERT_TRUE(xg.grad().defined());
  EXPECT_TRUE(xg.grad().is_contiguous(at::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(xg.grad().equal(all.input));
  EXPECT_TRUE(wg.grad().equal(all.weight));
}

TEST(PatchwiseConvTranspose2d, AppliesOnlyWhereEachPixelWritesItsOwnPatch) {
  const at::Tensor x = torch::randn({2, 4, 5, 5}), w = torch::randn({4, 3, 2, 2});
  const at::Tensor b = torch::randn({3});
  EXPECT_TRUE(applies(x, w, b, {2, 2}));
  EXPECT_TRUE(applies(x, w, at::Tensor(), {2, 2}));
  EXPECT_FALSE(applies(x, w, b, {1, 1}));          // patches overlap
  EXPECT_FALSE(applies(x, w, b, {2, 2}, {1, 1}));  // padding crops them
  EXPECT_FALSE(applies(x, w, b, {2, 2}, {0, 0}, {1, 1}));
  EXPECT_FALSE(applies(x, w, b, {2, 2}, {0, 0}, {0, 0}, {2, 2}));
  EXPECT_FALSE(applies(x, torch::randn({4, 1, 2, 2}), torch::randn({2}), {2, 2}, {0, 0}, {0, 0},
                       {1, 1}, 2));  // groups
  // The keypoint head's 4x4 stride 2 padding 1 upsampling.
  EXPECT_FALSE(applies(x, torch::randn({4, 3, 4, 4}), b, {2, 2}, {1, 1}));
  EXPECT_FALSE(applies(x.to(at::kBFloat16), w.to(at::kBFloat16), b.to(at::kBFloat16), {2, 2}));
  EXPECT_FALSE(applies(torch::randn({0, 4, 5, 5}), w, b, {2, 2}));  // no ROIs: libtorch's
  EXPECT_FALSE(applies(x, w, torch::randn({4}), {2, 2}));           // bias of the wrong size
  {
    // Under autocast libtorch's bfloat16 transposed convolution runs, as Detectron2's on
    // torch 2.11.
    at::autocast::set_autocast_enabled(at::kCPU, true);
    const bool under_autocast = applies(x, w, b, {2, 2});
    at::autocast::set_autocast_enabled(at::kCPU, false);
    EXPECT_FALSE(under_autocast);
  }
}

TEST(PatchwiseConvTranspose2d, ShapesThatDoNotFitAreNamedErrors) {
  const at::Tensor x = torch::randn({2, 4, 5, 5});
  auto message = [](const std::function<void()>& call) {
    try {
      call();
    } catch (const c10::Error& e) {
      return std::string(e.what_without_backtrace());
    }
    return std::string("no error");
  };
  // Weight channels that are not the input's.
  EXPECT_NE(message([&] {
              patchwise_conv_transpose2d(x, torch::randn({3, 2, 2, 2}), at::Tensor());
            })
                .find("input (N, C, H, W) and weight (C, O, kh, kw) needed, got [2, 4, 5, 5] and "
                      "[3, 2, 2, 2]"),
            std::string::npos);
  EXPECT_NE(message([&] {
              patchwise_conv_transpose2d(x, torch::randn({4, 3, 2, 2}), torch::randn({5}));
            }).find("bias must be (3), got [5]"),
            std::string::npos);
  // A gradient that is not the forward's output: named, with both shapes.
  EXPECT_NE(message([&] {
              cpu::patchwise_conv_transpose2d_backward(torch::randn({2, 3, 10, 9}), x,
                                                       torch::randn({4, 3, 2, 2}), false,
                                                       {true, true, false});
            })
                .find("grad_output [2, 3, 10, 9] is not the output of input [2, 4, 5, 5] and "
                      "weight [4, 3, 2, 2]"),
            std::string::npos);
}

}  // namespace
}  // namespace detkit::ops
