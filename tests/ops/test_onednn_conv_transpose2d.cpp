// detkit::ops::onednn_conv_transpose2d: the three gradients against a float64
// at::conv_transpose2d, next to float32 at::conv_transpose2d's own distance from it, the forward
// pass (libtorch's) bit for bit, and when it applies. On a CPU with AVX-512 oneDNN has JIT kernels
// for the mask head's shape: not applying there is a failure; elsewhere the test says which shapes
// it skipped.
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <string>

#include "detkit/ops/onednn_conv_transpose2d.h"
#include "detkit/ops/winograd_conv2d.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::relative_error;

namespace detkit::ops {
namespace {

struct Case {
  int64_t n, c, o, h, w, kernel, stride, padding;
  bool bias;
};

std::string describe(const Case& k) {
  return "input (" + std::to_string(k.n) + ", " + std::to_string(k.c) + ", " + std::to_string(k.h) +
         ", " + std::to_string(k.w) + "), " + std::to_string(k.o) + " outputs, kernel " +
         std::to_string(k.kernel) + ", stride " + std::to_string(k.stride) + ", padding " +
         std::to_string(k.padding) + (k.bias ? ", bias" : "");
}

bool applies(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, const Case& k) {
  return onednn_conv_transpose2d_applies(x, w, b, {k.stride, k.stride}, {k.padding, k.padding},
                                         {0, 0}, {1, 1}, 1);
}

struct Result {
  at::Tensor out, grad_input, grad_weight, grad_bias;
};

Result run(bool onednn, const Case& k, const at::Tensor& x0, const at::Tensor& w0,
           const at::Tensor& b0, const at::Tensor& g) {
  at::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  at::Tensor b = b0.defined() ? b0.clone().requires_grad_(true) : at::Tensor();
  at::Tensor y = onednn ? onednn_conv_transpose2d(x, w, b, k.stride, k.padding)
                        : at::conv_transpose2d(x, w, b, k.stride, k.padding);
  y.backward(g);
  return {y.detach(), x.grad(), w.grad(), b.defined() ? b.grad() : at::Tensor()};
}

// max |a - ref| / max |ref|

TEST(OnednnConvTranspose2d, GradientsAgreeWithConvTranspose2dWithinFloat32Rounding) {
  torch::manual_seed(0);
  // The mask head's upsampling (Detectron2's 256 channels, the demo's 128 with bias), channel
  // counts that are not multiples of oneDNN's 16-wide blocks, a keypoint-head-like 4x4 stride 2.
  const Case cases[] = {{24, 256, 256, 14, 14, 2, 2, 0, true},
                        {7, 128, 128, 14, 14, 2, 2, 0, true},
                        {3, 40, 24, 9, 11, 2, 2, 0, false},
                        {4, 64, 32, 14, 14, 4, 2, 1, true},
                        {2, 48, 48, 10, 10, 3, 1, 1, true}};
  for (const Case& k : cases) {
    SCOPED_TRACE(describe(k));
    at::Tensor x = at::randn({k.n, k.c, k.h, k.w}).relu_();  // activations after a ReLU
    at::Tensor w = at::randn({k.c, k.o, k.kernel, k.kernel}) * std::sqrt(2.0 / k.c);
    at::Tensor b = k.bias ? at::randn({k.o}) * 0.1 : at::Tensor();
    if (!applies(x, w, b, k)) {
      if (&k == &cases[0])
        ASSERT_FALSE(winograd_conv2d_available())
            << "an AVX-512 CPU (oneDNN has Winograd kernels here) without JIT deconvolution "
               "kernels for the mask head's shape";
      std::cout << "[ deconvolution ] " << describe(k) << ": oneDNN has no JIT kernel here, "
                << "at::conv_transpose2d runs it" << std::endl;
      continue;
    }
    const int64_t out_h = (k.h - 1) * k.stride - 2 * k.padding + k.kernel;
    const int64_t out_w = (k.w - 1) * k.stride - 2 * k.padding + k.kernel;
    at::Tensor g = at::randn({k.n, k.o, out_h, out_w});
    Result ref = run(false, k, x.to(at::kDouble), w.to(at::kDouble), k.bias ? b.to(at::kDouble) : b,
                     g.to(at::kDouble));
    Result libtorch = run(false, k, x, w, b, g), onednn = run(true, k, x, w, b, g);
    const char* names[] = {"output", "grad_input", "grad_weight", "grad_bias"};
    const at::Tensor Result::*fields[] = {&Result::out, &Result::grad_input, &Result::grad_weight,
                                          &Result::grad_bias};
    for (int i = 0; i < (k.bias ? 4 : 3); ++i) {
      const double e_onednn = relative_error(onednn.*fields[i], ref.*fields[i]);
      const double e_libtorch = relative_error(libtorch.*fields[i], ref.*fields[i]);
      std::cout << "[ deconvolution ] " << describe(k) << " " << names[i]
                << ": max diff / max |value| oneDNN " << e_onednn
                << ", at::conv_transpose2d float32 " << e_libtorch << std::endl;
      EXPECT_EQ((onednn.*fields[i]).sizes(), (ref.*fields[i]).sizes());
      EXPECT_LT(e_onednn, 1e-5) << names[i];
    }
    EXPECT_TRUE(onednn.out.equal(libtorch.out)) << "the forward pass is libtorch's";
    if (!k.bias) EXPECT_FALSE(onednn.grad_bias.defined());
  }
}

TEST(OnednnConvTranspose2d, ComputesOnlyTheGradientsAskedForAndRunsWithoutGradMode) {
  torch::manual_seed(1);
  const Case k{5, 32, 32, 14, 14, 2, 2, 0, true};
  at::Tensor x = at::randn({k.n, k.c, k.h, k.w});  // an input that wants no gradient
  at::Tensor w = (at::randn({k.c, k.o, 2, 2}) * 0.1).requires_grad_(true);
  at::Tensor b = at::zeros({k.o});  // a bias that is not trained
  if (!applies(x, w, b, k)) GTEST_SKIP() << "oneDNN has no JIT deconvolution kernel on this CPU";
  onednn_conv_transpose2d(x, w, b, 2, 0).sum().backward();
  EXPECT_FALSE(x.grad().defined());
  ASSERT_TRUE(w.grad().defined());
  at::Tensor w2 = w.detach().clone().requires_grad_(true);
  at::conv_transpose2d(x, w2, b, 2).sum().backward();
  EXPECT_LT(relative_error(w.grad(), w2.grad().to(at::kDouble)), 1e-5);

  torch::NoGradGuard no_grad;
  at::Tensor y = onednn_conv_transpose2d(x, w, b, 2, 0);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_LT(relative_error(y, at::conv_transpose2d(x.to(at::kDouble), w.to(at::kDouble),
                                                   b.to(at::kDouble), 2)),
            1e-5);
}

TEST(OnednnConvTranspose2d, AppliesOnlyToPlainFloat32TransposedConvolutions) {
  at::Tensor x = at::randn({2, 64, 14, 14}), w = at::randn({64, 32, 2, 2}), b = at::randn({32});
  const Case k{2, 64, 32, 14, 14, 2, 2, 0, true};
  if (!applies(x, w, b, k)) GTEST_SKIP() << "oneDNN has no JIT deconvolution kernel on this CPU";
  auto with = [&](at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef output_padding,
                  at::IntArrayRef dilation, int64_t groups) {
    return onednn_conv_transpose2d_applies(x, w, b, stride, padding, output_padding, dilation,
                                           groups);
  };
  EXPECT_TRUE(with({2, 2}, {0, 0}, {0, 0}, {1, 1}, 1));
  EXPECT_FALSE(with({2, 1}, {0, 0}, {0, 0}, {1, 1}, 1)) << "strides differ";
  EXPECT_FALSE(with({2, 2}, {1, 0}, {0, 0}, {1, 1}, 1)) << "paddings differ";
  EXPECT_FALSE(with({2, 2}, {0, 0}, {1, 1}, {1, 1}, 1)) << "output padding";
  EXPECT_FALSE(with({2, 2}, {0, 0}, {0, 0}, {2, 2}, 1)) << "dilation";
  EXPECT_FALSE(onednn_conv_transpose2d_applies(x, at::randn({64, 16, 2, 2}), b, {2, 2}, {0, 0},
                                               {0, 0}, {1, 1}, 2))
      << "groups";
  EXPECT_FALSE(onednn_conv_transpose2d_applies(
      x.to(at::kDouble), w.to(at::kDouble), b.to(at::kDouble), {2, 2}, {0, 0}, {0, 0}, {1, 1}, 1));
  EXPECT_FALSE(
      onednn_conv_transpose2d_applies(x.transpose(2, 3), w, b, {2, 2}, {0, 0}, {0, 0}, {1, 1}, 1))
      << "not contiguous";
  EXPECT_FALSE(onednn_conv_transpose2d_applies(at::randn({0, 64, 14, 14}), w, b, {2, 2}, {0, 0},
                                               {0, 0}, {1, 1}, 1))
      << "empty batch";
  EXPECT_FALSE(
      onednn_conv_transpose2d_applies(x, w, at::randn({31}), {2, 2}, {0, 0}, {0, 0}, {1, 1}, 1))
      << "bias of the wrong size";
  {
    at::autocast::set_cpu_enabled(true);  // bfloat16 autocast: libtorch's kernels
    const bool under_autocast = with({2, 2}, {0, 0}, {0, 0}, {1, 1}, 1);
    at::autocast::set_cpu_enabled(false);
    EXPECT_FALSE(under_autocast);
  }
  EXPECT_THROW(onednn_conv_transpose2d(x, w.narrow(0, 0, 32).contiguous(), b, 2, 0), c10::Error);
}

}  // namespace
}  // namespace detkit::ops
