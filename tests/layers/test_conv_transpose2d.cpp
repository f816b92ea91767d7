// layers::conv_transpose2d: a torch::nn::ConvTranspose2d's forward under CONV_ALGORITHM: the
// module's own values either way; under "auto" the gradients agree to float32 rounding (on
// oneDNN's kernels where they apply; ops/test_onednn_conv_transpose2d.cpp measures how close) and
// reach the module's own parameters.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>

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

}  // namespace
}  // namespace detkit::layers
