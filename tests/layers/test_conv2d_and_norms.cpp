#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <string>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/layers/conv2d.h"
#include "detkit/layers/frozen_batch_norm.h"
#include "detkit/layers/norm.h"
#include "detkit/utils/error.h"

namespace detkit::layers {

TEST(FrozenBatchNorm2d, EqualsBatchNormInEvalModeAndHasNoParameters) {
  torch::manual_seed(0);
  FrozenBatchNorm2d frozen(4);
  torch::nn::BatchNorm2d bn(4);
  bn->eval();
  {
    torch::NoGradGuard no_grad;
    for (auto* t : {&bn->weight, &bn->bias, &bn->running_mean}) t->uniform_(-1, 1);
    bn->running_var.uniform_(0.5, 2);
    frozen->named_buffers()["weight"].copy_(bn->weight);
    frozen->named_buffers()["bias"].copy_(bn->bias);
    frozen->named_buffers()["running_mean"].copy_(bn->running_mean);
    frozen->named_buffers()["running_var"].copy_(bn->running_var);
  }
  auto x = torch::randn({2, 4, 5, 6});
  EXPECT_TRUE(torch::allclose(frozen->forward(x), bn->forward(x), 1e-5, 1e-6));
  // The differentiable form used when the input needs a gradient gives the same numbers.
  auto xg = x.clone().requires_grad_(true);
  auto y = frozen->forward(xg);
  EXPECT_TRUE(torch::allclose(y, bn->forward(x), 1e-5, 1e-6));
  y.sum().backward();
  EXPECT_TRUE(xg.grad().defined());
  EXPECT_TRUE(frozen->parameters().empty());
  auto names = checkpoint::state_dict(*frozen);
  EXPECT_EQ(names.size(), 4u);
  EXPECT_TRUE(names.count("running_var"));
}

TEST(Conv2d, NamesMatchDetectron2AndNormApplies) {
  Conv2d conv(Conv2dOptions(3, 8, 3).padding(1).bias(false).norm("FrozenBN").relu(true));
  auto names = checkpoint::state_dict(*conv);
  std::vector<std::string> keys;
  for (const auto& [k, v] : names) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"norm.bias", "norm.running_mean", "norm.running_var",
                                            "norm.weight", "weight"}));
  auto x = torch::randn({1, 3, 7, 7});
  auto expected = torch::relu(torch::conv2d(x, conv->weight(), {}, 1, 1) / std::sqrt(1.0));
  EXPECT_TRUE(torch::allclose(conv->forward(x), expected, 1e-4, 1e-5));
  EXPECT_EQ(conv->forward(x).sizes(), (at::IntArrayRef{1, 8, 7, 7}));
}

TEST(Conv2d, GroupsAndStrideAndInit) {
  Conv2d conv(Conv2dOptions(8, 16, 3).stride(2).padding(1).groups(4));
  EXPECT_EQ(conv->weight().sizes(), (at::IntArrayRef{16, 2, 3, 3}));
  EXPECT_EQ(conv->forward(torch::randn({2, 8, 9, 9})).sizes(), (at::IntArrayRef{2, 16, 5, 5}));
  c2_msra_fill(conv);
  EXPECT_EQ(conv->bias().abs().sum().item<float>(), 0.f);
  // fan_out = 16 * 9: std = sqrt(2 / 144) = 0.118
  EXPECT_NEAR(conv->weight().std().item<float>(), std::sqrt(2.0 / 144), 0.03);
  EXPECT_THROW(Conv2d(Conv2dOptions(6, 16, 3).groups(4)), c10::Error);
}

// CONV_ALGORITHM: Conv2d runs at::conv2d under "auto" as under "direct" (only transposed
// convolutions differ, layers/test_conv_transpose2d.cpp); the ReLU and norm follow either way.
TEST(Conv2d, EitherConvAlgorithmComputesTheSameConvolution) {
  torch::manual_seed(3);
  Conv2d conv(Conv2dOptions(32, 48, 3).padding(1).relu(true));
  at::Tensor x = torch::randn({2, 32, 20, 24});
  set_conv_algorithm(ConvAlgorithm::kDirect);
  at::Tensor direct = conv->forward(x);
  EXPECT_TRUE(direct.equal(at::relu(at::conv2d(x, conv->weight(), conv->bias(), 1, 1))));
  set_conv_algorithm(ConvAlgorithm::kAuto);
  EXPECT_TRUE(conv->forward(x).equal(direct));
  EXPECT_EQ(parse_conv_algorithm("auto"), ConvAlgorithm::kAuto);
  EXPECT_EQ(parse_conv_algorithm("direct"), ConvAlgorithm::kDirect);
  try {
    parse_conv_algorithm("fastest");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("CONV_ALGORITHM 'fastest'"), std::string::npos)
        << e.what();
  }
  EXPECT_NE(conv_algorithm_report(ConvAlgorithm::kDirect).find("direct"), std::string::npos);
}

// Inference (no gradients) folds an affine norm (FrozenBN, BN in eval) into the convolution:
// the same values as convolution-then-norm (computed with gradients on), for a 3x3 shape and a
// 1x1 one, with and without a bias; the folded weight is remade when a running
// statistic changes in place, when a parameter is replaced, and not used in training (BN by its
// batch) nor by norms that are not affine (GN).
TEST(Conv2d, InferenceFoldsAnAffineNormIntoTheConvolution) {
  struct Case {
    std::string norm;
    int64_t kernel;
    bool bias;
  };
  for (const Case& k : {Case{"BN", 3, false}, Case{"FrozenBN", 1, true}, Case{"GN", 3, false}}) {
    SCOPED_TRACE(k.norm);
    torch::manual_seed(3);
    Conv2d conv(Conv2dOptions(32, 64, k.kernel).padding(k.kernel / 2).bias(k.bias).norm(k.norm)
                    .relu(true));
    conv->eval();
    auto buffers = conv->named_buffers();
    {
      torch::NoGradGuard no_grad;
      for (const auto& b : buffers)
        if (b.key().find("running_var") != std::string::npos) b.value().uniform_(0.5, 2);
        else if (b.value().is_floating_point()) b.value().uniform_(-1, 1);
    }
    const at::Tensor x = torch::randn({2, 32, 28, 28});
    auto unfolded = [&] { return conv->forward(x).detach(); };  // gradients on: no folding
    auto folded = [&] {
      at::InferenceMode inference;
      return conv->forward(x).clone();
    };
    auto max_relative = [](const at::Tensor& a, const at::Tensor& b) {
      return ((a - b).abs().max() / b.abs().max()).item<double>();
    };
    const double diff = max_relative(folded(), unfolded());
    std::cout << "[ conv fold ] " << k.norm << " " << k.kernel << "x" << k.kernel
              << ": folded vs convolution then norm, max diff / max |value| " << diff << "\n";
    EXPECT_LT(diff, 1e-5);
    if (k.norm == "GN") continue;
    {
      torch::NoGradGuard no_grad;
      buffers["norm.running_var"].mul_(4);  // in place: the folded weight must follow
    }
    EXPECT_LT(max_relative(folded(), unfolded()), 1e-5) << "after running_var changed in place";
    {
      torch::NoGradGuard no_grad;  // new data, the version kept (as master weights cast them)
      conv->weight().set_data(conv->weight().detach() * 2);
    }
    EXPECT_LT(max_relative(folded(), unfolded()), 1e-5) << "after the weight's set_data";
    if (k.norm == "BN") {  // training: the batch's statistics, without gradients too
      const at::Tensor by_running = unfolded();
      conv->train();
      at::Tensor no_grad_out;
      {
        torch::NoGradGuard no_grad;
        no_grad_out = conv->forward(x);
      }
      EXPECT_LT(max_relative(no_grad_out, conv->forward(x).detach()), 1e-5);
      EXPECT_GT(max_relative(no_grad_out, by_running), 1e-2) << "training used running statistics";
    }
  }
}

TEST(Norm, ByConfigName) {
  EXPECT_TRUE(make_norm("", 8).is_empty());
  EXPECT_EQ(make_norm("GN", 64).forward(torch::randn({1, 64, 2, 2})).sizes(),
            (at::IntArrayRef{1, 64, 2, 2}));
  EXPECT_NO_THROW(make_norm("BN", 8));
  EXPECT_NO_THROW(make_norm("FrozenBN", 8));
  try {
    make_norm("LayerNorm", 8);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown norm 'LayerNorm'"), std::string::npos);
  }
}

TEST(Norm, NormalizationParametersAreEveryTrainedNormsWeightAndBias) {
  // Conv2d with each norm by name: the norm's affine parameters are found, the conv's are not,
  // and FrozenBN (buffers only) has none.
  for (const std::string name : {"BN", "SyncBN", "naiveSyncBN_N", "GN", "FrozenBN", ""}) {
    Conv2d conv(Conv2dOptions(32, 32, 3).bias(false).norm(name));
    const auto found = normalization_parameters(*conv);
    EXPECT_EQ(found.size(), name == "FrozenBN" || name.empty() ? 0u : 2u) << name;
    EXPECT_EQ(found.count(conv->weight().unsafeGetTensorImpl()), 0u) << name;
  }
}

}  // namespace detkit::layers
