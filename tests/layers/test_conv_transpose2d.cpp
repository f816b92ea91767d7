// layers::conv_transpose2d: a torch::nn::ConvTranspose2d's forward under CONV_ALGORITHM: the
// module's own values either way (to float32 rounding under "auto", where the mask head's
// upsampling is a matrix product); under "auto" the gradients agree to float32 rounding (as
// matrix products; ops/test_patchwise_conv_transpose2d.cpp measures how close) and reach the
// module's own parameters.
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "detkit/layers/conv2d.h"
#include "detkit/layers/conv_transpose2d.h"

namespace detkit::layers {
namespace {

TEST(ConvTranspose2d, EitherConvAlgorithmComputesTheModulesConvolution) {
  torch::manual_seed(5);
  // The mask head's upsampling and the keypoint head's (a 4x4 kernel, padding 1).
  for (auto options : {torch::nn::ConvTranspose2dOptions(32, 32, 2).stride(2),
                       torch::nn::ConvTranspose2dOptions(32, 17, 4).stride(2).padding(1)}) {
    torch::nn::ConvTranspose2d deconv(options);
    at::Tensor x = torch::randn({3, 32, 14, 14});
    set_conv_algorithm(ConvAlgorithm::kDirect);
    at::Tensor direct = conv_transpose2d(deconv, x);
    EXPECT_TRUE(direct.equal(deconv->forward(x)));

    set_conv_algorithm(ConvAlgorithm::kAuto);
    at::Tensor xg = x.clone().requires_grad_(true);
    at::Tensor automatic = conv_transpose2d(deconv, xg);
    const double value_diff = (automatic - direct).abs().max().item<double>();
    std::cout << "[ conv algorithm ] auto vs direct, transposed conv " << deconv->weight.sizes()
              << ": max diff " << value_diff << " (max |value| "
              << direct.abs().max().item<double>() << ")\n";
    EXPECT_TRUE(at::allclose(automatic, direct, 1e-5, 1e-6));
    automatic.square().sum().backward();
    ASSERT_TRUE(deconv->weight.grad().defined());
    ASSERT_TRUE(deconv->bias.grad().defined());
    at::Tensor grad_auto = deconv->weight.grad().clone();
    deconv->zero_grad();
    set_conv_algorithm(ConvAlgorithm::kDirect);
    conv_transpose2d(deconv, x).square().sum().backward();
    const double diff =
        ((grad_auto - deconv->weight.grad()).abs().max() / deconv->weight.grad().abs().max())
            .item<double>();
    std::cout << "[ conv algorithm ] auto vs direct, transposed conv " << deconv->weight.sizes()
              << ": weight gradient max diff / max |value| " << diff << "\n";
    EXPECT_LT(diff, 1e-5);
  }
  set_conv_algorithm(ConvAlgorithm::kAuto);
}

// Under "auto", in inference and in training, a transposed convolution whose stride equals its
// kernel runs as ops::patchwise_conv_transpose2d (the keypoint head's 4x4 stride 2 does not):
// libtorch's values to float32 rounding.
TEST(ConvTranspose2d, TheMaskHeadsUpsamplingRunsAsOneMatrixProduct) {
  torch::manual_seed(1);
  torch::nn::ConvTranspose2d deconv(torch::nn::ConvTranspose2dOptions(16, 8, 2).stride(2));
  const at::Tensor x = torch::randn({5, 16, 14, 14});
  set_conv_algorithm(ConvAlgorithm::kAuto);
  static thread_local std::vector<std::string> ops_called;
  auto first_op = [](const std::function<at::Tensor()>& run, at::Tensor& out) {
    ops_called.clear();
    const auto handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback([](const at::RecordFunction& fn)
                                       -> std::unique_ptr<at::ObserverContext> {
          ops_called.emplace_back(fn.name());
          return nullptr;
        }).scopes({at::RecordScope::FUNCTION}));
    out = run();
    at::removeCallback(handle);
    return ops_called.empty() ? std::string() : ops_called.front();
  };
  const at::Tensor libtorch = deconv->forward(x).detach();
  for (const bool training : {false, true}) {
    torch::AutoGradMode grad_mode(training);
    at::Tensor out;
    EXPECT_EQ(first_op([&] { return conv_transpose2d(deconv, x); }, out),
              "detkit::patchwise_conv_transpose2d");
    EXPECT_EQ(out.requires_grad(), training);
    const double diff = (out - libtorch).abs().max().item<double>();
    std::cout << "[ conv algorithm ] " << (training ? "training" : "inference")
              << ", transposed conv " << deconv->weight.sizes()
              << " as one matrix product vs libtorch's: max diff " << diff << " (max |value| "
              << libtorch.abs().max().item<double>() << ")\n";
    EXPECT_TRUE(at::allclose(out, libtorch, 1e-5, 1e-6));
  }
  torch::nn::ConvTranspose2d keypoint(
      torch::nn::ConvTranspose2dOptions(16, 8, 4).stride(2).padding(1));
  at::Tensor out;
  EXPECT_NE(first_op([&] { return conv_transpose2d(keypoint, x); }, out),
            "detkit::patchwise_conv_transpose2d");
  set_conv_algorithm(ConvAlgorithm::kDirect);
  EXPECT_TRUE(conv_transpose2d(deconv, x).equal(deconv->forward(x)));
  set_conv_algorithm(ConvAlgorithm::kAuto);
}

}  // namespace
}  // namespace detkit::layers
