// layers::conv_transpose2d: a torch::nn::ConvTranspose2d's forward under CONV_ALGORITHM: the
// module's own values either way; under "auto" the gradients agree to float32 rounding (on
// oneDNN's kernels where they apply; ops/test_onednn_conv_transpose2d.cpp measures how close) and
// reach the module's own parameters.
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

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
    EXPECT_TRUE(automatic.equal(direct));
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

// In inference (no gradients) under "auto", a transposed convolution whose stride equals its
// kernel runs as ops::patchwise_conv_transpose2d: libtorch's values to float32 rounding.
TEST(ConvTranspose2d, InferenceRunsTheMaskHeadsUpsamplingAsOneMatrixProduct) {
  torch::manual_seed(1);
  torch::nn::ConvTranspose2d deconv(torch::nn::ConvTranspose2dOptions(16, 8, 2).stride(2));
  const at::Tensor x = torch::randn({5, 16, 14, 14});
  torch::NoGradGuard no_grad;
  set_conv_algorithm(ConvAlgorithm::kAuto);
  static thread_local std::vector<std::string> ops_called;
  ops_called.clear();
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback([](const at::RecordFunction& fn)
                                     -> std::unique_ptr<at::ObserverContext> {
        ops_called.emplace_back(fn.name());
        return nullptr;
      }).scopes({at::RecordScope::FUNCTION}));
  const at::Tensor inference = conv_transpose2d(deconv, x);
  at::removeCallback(handle);
  EXPECT_EQ(ops_called.at(0), "detkit::patchwise_conv_transpose2d");
  const at::Tensor libtorch = deconv->forward(x);
  const double diff = (inference - libtorch).abs().max().item<double>();
  std::cout << "[ conv algorithm ] inference, transposed conv " << deconv->weight.sizes()
            << " as one matrix product vs libtorch's: max diff " << diff << " (max |value| "
            << libtorch.abs().max().item<double>() << ")\n";
  EXPECT_TRUE(at::allclose(inference, libtorch, 1e-5, 1e-6));
  set_conv_algorithm(ConvAlgorithm::kDirect);
  EXPECT_TRUE(conv_transpose2d(deconv, x).equal(libtorch));
  set_conv_algorithm(ConvAlgorithm::kAuto);
}

}  // namespace
}  // namespace detkit::layers
