// detkit::ops::winograd_conv2d: forward and the three gradients against a float64 at::conv2d, next
// to float32 at::conv2d's own distance from it (the rounding Winograd adds is what is measured),
// channels-last maps, and when it applies. Skipped on CPUs without oneDNN's Winograd kernels (no
// AVX-512).
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <string>

#include "detkit/ops/cpu/conv_primitives.h"
#include "detkit/ops/cpu/winograd_conv2d_kernel.h"
#include "detkit/ops/winograd_conv2d.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::relative_error;

namespace detkit::ops {
namespace {

bool have_kernels() { return winograd_conv2d_available(); }

#define SKIP_WITHOUT_WINOGRAD() \
  if (!have_kernels())          \
  GTEST_SKIP() << "oneDNN has no Winograd kernels on this CPU (they need AVX-512; see lscpu)"

struct Case {
  int64_t n, c, o, h, w;
  bool bias;
};

std::string describe(const Case& k) {
  return "input (" + std::to_string(k.n) + ", " + std::to_string(k.c) + ", " + std::to_string(k.h) +
         ", " + std::to_string(k.w) + "), " + std::to_string(k.o) + " outputs" +
         (k.bias ? ", bias" : "");
}

struct Result {
  at::Tensor out, grad_input, grad_weight, grad_bias;
};

// The convolution and its gradients for upstream gradient `g`, by Winograd or by at::conv2d.
Result run(bool winograd, const at::Tensor& x0, const at::Tensor& w0, const at::Tensor& b0,
           const at::Tensor& g) {
  at::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  at::Tensor b = b0.defined() ? b0.clone().requires_grad_(true) : at::Tensor();
  at::Tensor y = winograd ? winograd_conv2d(x, w, b) : at::conv2d(x, w, b, 1, 1);
  y.backward(g);
  return {y.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : at::Tensor()};
}

struct Inputs {
  at::Tensor x, w, b, g;  // b undefined without a bias
};

// Activations after a ReLU, He-scaled weights, a small bias, an upstream gradient.
Inputs random_inputs(const Case& k) {
  at::Tensor x = at::randn({k.n, k.c, k.h, k.w}).relu_();
  at::Tensor w = at::randn({k.o, k.c, 3, 3}) * std::sqrt(2.0 / (9 * k.c));
  at::Tensor b = k.bias ? at::randn({k.o}) * 0.1 : at::Tensor();
  return {x, w, b, at::randn({k.n, k.o, k.h, k.w})};
}

// A Result's fields, and their names for the printed differences.
const char* const kFieldNames[] = {"output", "grad_input", "grad_weight", "grad_bias"};
const at::Tensor Result::*const kFields[] = {&Result::out, &Result::grad_input,
                                             &Result::grad_weight, &Result::grad_bias};

// max |a - ref| / max |ref|

TEST(WinogradConv2d, ForwardAndGradientsAgreeWithConv2dWithinFloat32Rounding) {
  SKIP_WITHOUT_WINOGRAD();
  torch::manual_seed(0);
  // An FPN head's map, a 27-channel class-score conv without a bias, a mask head's ROI batch, a
  // map whose sides are not multiples of Winograd's 4x4 tile.
  for (const Case& k : {Case{2, 64, 64, 32, 48, true}, Case{1, 128, 27, 40, 40, false},
                        Case{24, 128, 128, 14, 14, true}, Case{3, 32, 48, 23, 17, true}}) {
    SCOPED_TRACE(describe(k));
    const auto [x, w, b, g] = random_inputs(k);
    ASSERT_TRUE(winograd_conv2d_applies(x, w, b, 1, 1, 1, 1));
    Result ref = run(false, x.to(at::kDouble), w.to(at::kDouble), k.bias ? b.to(at::kDouble) : b,
                     g.to(at::kDouble));
    Result direct = run(false, x, w, b, g), wino = run(true, x, w, b, g);
    for (int i = 0; i < (k.bias ? 4 : 3); ++i) {
      const double e_wino = relative_error(wino.*kFields[i], ref.*kFields[i]);
      const double e_direct = relative_error(direct.*kFields[i], ref.*kFields[i]);
      std::cout << "[ winograd ] " << describe(k) << " " << kFieldNames[i]
                << ": max diff / max |value| winograd " << e_wino << ", at::conv2d float32 "
                << e_direct << std::endl;
      EXPECT_EQ((wino.*kFields[i]).sizes(), (ref.*kFields[i]).sizes());
      // Winograd's transforms cost about a decimal digit against the direct kernels' ~1e-7.
      EXPECT_LT(e_wino, 1e-5) << kFieldNames[i];
    }
    if (!k.bias) EXPECT_FALSE(wino.grad_bias.defined());
  }
}

TEST(WinogradConv2d, ChannelsLastMapsGiveTheSameValuesInTheirOwnLayout) {
  SKIP_WITHOUT_WINOGRAD();
  torch::manual_seed(2);
  const auto cl = at::MemoryFormat::ChannelsLast;
  const at::Tensor x = at::randn({2, 32, 20, 28}), w = at::randn({48, 32, 3, 3}) * 0.1;
  const at::Tensor b = at::randn({48}) * 0.1, g = at::randn({2, 48, 20, 28});
  ASSERT_TRUE(winograd_conv2d_applies(x.contiguous(cl), w, b, 1, 1, 1, 1));
  const Result nchw = run(true, x, w, b, g);
  // A channels-last map with an NCHW upstream gradient, and with a channels-last one.
  for (const at::Tensor& grad : {g, g.contiguous(cl)}) {
    const Result nhwc = run(true, x.contiguous(cl), w, b, grad);
    EXPECT_TRUE(nhwc.out.is_contiguous(cl));
    // The op's own input gradient (x.grad() would be laid out like x whatever the op returned).
    const at::Tensor xc = x.contiguous(cl).requires_grad_(true);
    const at::Tensor gin = torch::autograd::grad({winograd_conv2d(xc, w, b)}, {xc}, {grad})[0];
    EXPECT_TRUE(gin.is_contiguous(cl) && !gin.is_contiguous());
    EXPECT_TRUE(at::equal(gin, nchw.grad_input));
    EXPECT_TRUE(at::equal(nhwc.out, nchw.out));
    EXPECT_TRUE(at::equal(nhwc.grad_input, nchw.grad_input));
    EXPECT_TRUE(at::equal(nhwc.grad_weight, nchw.grad_weight));
    EXPECT_TRUE(at::equal(nhwc.grad_bias, nchw.grad_bias));
  }
}

TEST(WinogradConv2d, ABatchWhoseScratchpadIsLargeRunsImageByImage) {
  SKIP_WITHOUT_WINOGRAD();
  torch::manual_seed(3);
  // A map whose scratchpad exceeds the bound for two images and not for one.
  const Case k{2, 128, 128, 100, 168, true};
  const int64_t bound = cpu::kScratchpadPerBatchBytes;
  ASSERT_GT(cpu::winograd_scratchpad_bytes(k.n, k.c, k.o, k.h, k.w, k.bias), bound);
  ASSERT_LE(cpu::winograd_scratchpad_bytes(1, k.c, k.o, k.h, k.w, k.bias), bound);
  const auto cl = at::MemoryFormat::ChannelsLast;
  for (const bool channels_last : {false, true}) {
    SCOPED_TRACE(channels_last ? "channels-last" : "NCHW");
    auto [x, w, b, g] = random_inputs(k);
    if (channels_last) x = x.contiguous(cl);
    const Result batch = run(true, x, w, b, g);
    // The batch's gradients are its images' own: input gradients side by side, the weight's and
    // bias's summed in image order.
    const Result first = run(true, x.narrow(0, 0, 1), w, b, g.narrow(0, 0, 1));
    const Result second = run(true, x.narrow(0, 1, 1), w, b, g.narrow(0, 1, 1));
    EXPECT_TRUE(at::equal(batch.grad_input, at::cat({first.grad_input, second.grad_input})));
    EXPECT_TRUE(at::equal(batch.grad_weight, first.grad_weight + second.grad_weight));
    EXPECT_TRUE(at::equal(batch.grad_bias, first.grad_bias + second.grad_bias));
    EXPECT_TRUE(at::equal(batch.out, at::cat({first.out, second.out})));
    // And libtorch's float32 convolution's, within Winograd's rounding.
    const Result direct = run(false, x, w, b, g);
    const double e_input = relative_error(batch.grad_input, direct.grad_input.to(at::kDouble));
    const double e_weight = relative_error(batch.grad_weight, direct.grad_weight.to(at::kDouble));
    std::cout << "[ winograd ] " << describe(k) << " image by image: max diff / max |value| vs "
              << "at::conv2d output " << relative_error(batch.out, direct.out.to(at::kDouble))
              << ", grad_input " << e_input << ", grad_weight " << e_weight << std::endl;
    EXPECT_LT(relative_error(batch.out, direct.out.to(at::kDouble)), 1e-5);
    EXPECT_LT(e_input, 1e-5);
    EXPECT_LT(e_weight, 1e-5);
    EXPECT_LT(relative_error(batch.grad_bias, direct.grad_bias.to(at::kDouble)), 1e-5);
  }
}

TEST(WinogradConv2d, AWideBatchOfSmallMapsRunsInSlicesOfSeveralImages) {
  SKIP_WITHOUT_WINOGRAD();
  torch::manual_seed(6);
  // A mask head's ROI batch: over the bound as a whole, many images to a slice.
  const Case k{100, 256, 256, 14, 14, true};
  const int64_t bound = cpu::kScratchpadPerBatchBytes;
  ASSERT_GT(cpu::winograd_scratchpad_bytes(k.n, k.c, k.o, k.h, k.w, k.bias), bound);
  ASSERT_LT(cpu::winograd_scratchpad_bytes(10, k.c, k.o, k.h, k.w, k.bias), bound);
  const auto [x, w, b, g] = random_inputs(k);
  const Result sliced = run(true, x, w, b, g), direct = run(false, x, w, b, g);
  for (int i = 0; i < 4; ++i) {
    const double e = relative_error(sliced.*kFields[i], (direct.*kFields[i]).to(at::kDouble));
    std::cout << "[ winograd ] " << describe(k) << " in slices: " << kFieldNames[i]
              << " max diff / max |value| vs at::conv2d " << e << std::endl;
    EXPECT_LT(e, 1e-5) << kFieldNames[i];
  }
}

TEST(WinogradConv2d, ComputesOnlyTheGradientsAskedFor) {
  SKIP_WITHOUT_WINOGRAD();
  torch::manual_seed(1);
  at::Tensor x = at::randn({2, 32, 32, 32});  // a frozen input: no gradient wanted
  at::Tensor w = (at::randn({32, 32, 3, 3}) * 0.1).requires_grad_(true);
  at::Tensor b = at::zeros({32});  // a bias that is not trained
  winograd_conv2d(x, w, b).sum().backward();
  EXPECT_FALSE(x.grad().defined());
  ASSERT_TRUE(w.grad().defined());
  at::Tensor w2 = w.detach().clone().requires_grad_(true);
  at::conv2d(x, w2, b, 1, 1).sum().backward();
  EXPECT_LT(relative_error(w.grad(), w2.grad().to(at::kDouble)), 2e-5);

  // Without gradient mode the same kernels run and nothing is recorded for backward.
  torch::NoGradGuard no_grad;
  at::Tensor y = winograd_conv2d(x, w, b);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_LT(
      relative_error(y, at::conv2d(x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), 1, 1)),
      2e-5);
}

TEST(WinogradConv2d, AppliesOnlyToLargeFloat32ThreeByThreeStrideOneMaps) {
  SKIP_WITHOUT_WINOGRAD();
  at::Tensor x = at::randn({2, 64, 32, 32}), w = at::randn({64, 64, 3, 3});
  EXPECT_TRUE(winograd_conv2d_applies(x, w, at::Tensor(), 1, 1, 1, 1));
  EXPECT_FALSE(winograd_conv2d_applies(x, w, at::Tensor(), 2, 1, 1, 1)) << "stride 2";
  EXPECT_FALSE(winograd_conv2d_applies(x, w, at::Tensor(), 1, 2, 2, 1)) << "dilation 2";
  EXPECT_FALSE(winograd_conv2d_applies(x, at::randn({64, 32, 3, 3}), at::Tensor(), 1, 1, 1, 2))
      << "groups";
  EXPECT_FALSE(winograd_conv2d_applies(x, at::randn({64, 64, 1, 1}), at::Tensor(), 1, 0, 1, 1))
      << "1x1";
  EXPECT_FALSE(
      winograd_conv2d_applies(x.to(at::kDouble), w.to(at::kDouble), at::Tensor(), 1, 1, 1, 1));
  EXPECT_FALSE(
      winograd_conv2d_applies(x.to(at::kBFloat16), w.to(at::kBFloat16), at::Tensor(), 1, 1, 1, 1));
  EXPECT_FALSE(winograd_conv2d_applies(x.transpose(2, 3), w, at::Tensor(), 1, 1, 1, 1))
      << "neither NCHW nor channels-last";
  EXPECT_TRUE(winograd_conv2d_applies(x.contiguous(at::MemoryFormat::ChannelsLast), w, at::Tensor(),
                                      1, 1, 1, 1));
  // Maps below kWinogradMinMapPixels stay direct, whatever the batch; an empty batch too.
  EXPECT_FALSE(winograd_conv2d_applies(at::randn({64, 64, 13, 14}), w, at::Tensor(), 1, 1, 1, 1));
  EXPECT_TRUE(winograd_conv2d_applies(at::randn({1, 64, 14, 14}), w, at::Tensor(), 1, 1, 1, 1));
  EXPECT_FALSE(winograd_conv2d_applies(at::randn({0, 64, 14, 14}), w, at::Tensor(), 1, 1, 1, 1));
  {
    at::autocast::set_cpu_enabled(true);  // bfloat16 autocast: libtorch's kernels
    const bool applies = winograd_conv2d_applies(x, w, at::Tensor(), 1, 1, 1, 1);
    at::autocast::set_cpu_enabled(false);
    EXPECT_FALSE(applies);
  }
  EXPECT_THROW(winograd_conv2d(x, w.narrow(1, 0, 32).contiguous(), at::Tensor()), c10::Error);
}

}  // namespace
}  // namespace detkit::ops
