// AutocastGuard: a convolution inside runs in bfloat16 and one after it in fp32 again; nested
// scopes restore what they found; a disabled scope inside an enabled one runs fp32.
#include <ATen/autocast_mode.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/utils/autocast.h"

namespace detkit {
namespace {

at::Tensor conv(const at::Tensor& x, const at::Tensor& w) { return at::conv2d(x, w); }

TEST(AutocastGuard, RunsConvolutionsInBfloat16InsideAndFp32After) {
  const at::Tensor x = torch::randn({1, 2, 5, 5}), w = torch::randn({3, 2, 3, 3});
  {
    const AutocastGuard autocast(true);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(conv(x, w).scalar_type(), at::kBFloat16);
    // Precision-sensitive ops stay fp32 (libtorch's list): a loss. torch 2.x lists transposed
    // convolutions among CPU autocast's bfloat16 ops (1.13 kept them fp32), as its convolutions.
    EXPECT_EQ(at::mse_loss(x, x * 2).scalar_type(), at::kFloat);
    EXPECT_EQ(at::conv_transpose2d(x, w.transpose(0, 1)).scalar_type(), at::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(conv(x, w).scalar_type(), at::kFloat);
}

TEST(AutocastGuard, NestedScopesRestoreWhatTheyFound) {
  const at::Tensor x = torch::randn({1, 2, 5, 5}), w = torch::randn({3, 2, 3, 3});
  {
    const AutocastGuard outer(true);
    {
      const AutocastGuard fp32_region(false);
      EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
      EXPECT_EQ(conv(x, w).scalar_type(), at::kFloat);
    }
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(at::autocast::get_autocast_dtype(at::kCPU), at::kBFloat16);
    EXPECT_EQ(conv(x, w).scalar_type(), at::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  {
    const AutocastGuard off(false);  // what evaluation does without SOLVER.AMP
    EXPECT_EQ(conv(x, w).scalar_type(), at::kFloat);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
}

TEST(AutocastGuard, GradientsOfFp32WeightsStayFp32) {
  const at::Tensor x = torch::randn({1, 2, 5, 5});
  const at::Tensor w = torch::randn({3, 2, 3, 3}, torch::requires_grad());
  at::Tensor loss;
  {
    const AutocastGuard autocast(true);
    loss = conv(x, w).to(at::kFloat).sum();
  }
  loss.backward();
  EXPECT_EQ(w.grad().scalar_type(), at::kFloat);
}

}  // namespace
}  // namespace detkit
