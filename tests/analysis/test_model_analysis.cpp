// Model analysis: parameter tables, state-dict order, and FLOP counting (fvcore's convention)
// checked by hand on small modules and against a closed-form count for ResNet-50.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/analysis/flop_count.h"
#include "detkit/analysis/model_analysis.h"
#include "detkit/layers/conv2d.h"
#include "detkit/layers/conv_transpose2d.h"
#include "detkit/modeling/backbone/resnet.h"

namespace detkit::analysis {
namespace {

using modeling::ResNet;
using modeling::ResNetOptions;

// conv (3 -> 8, 3x3, padding 1, stride 2) -> head.fc (8*5*5 -> 7); up: transposed conv 8 -> 2.
struct TinyNet : torch::nn::Module {
  TinyNet() {
    conv = register_module("conv",
                           layers::Conv2d(layers::Conv2dOptions(3, 8, 3).stride(2).padding(1)));
    head = register_module("head", std::make_shared<torch::nn::Module>());
    fc = head->register_module("fc", torch::nn::Linear(8 * 5 * 5, 7));
    up = register_module(
        "up", torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(8, 2, 2).stride(2)));
    scale = register_buffer("scale", torch::ones({3}));
    conv->weight().set_requires_grad(false);
  }
  std::pair<at::Tensor, at::Tensor> forward(const at::Tensor& x) {
    at::Tensor y = conv->forward(x);
    return {fc->forward(y.flatten(1)), up->forward(y)};
  }
  layers::Conv2d conv{nullptr};
  std::shared_ptr<torch::nn::Module> head;
  torch::nn::Linear fc{nullptr};
  torch::nn::ConvTranspose2d up{nullptr};
  at::Tensor scale;
};

TEST(ModelAnalysis, ParameterCountsPerModule) {
  TinyNet net;
  auto rows = count_parameters(net, 5);
  // model, conv, head, head.fc, up: (3*8*9 + 8) + (200*7 + 7) + (8*2*4 + 2).
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0].name, "");
  EXPECT_EQ(rows[0].values, (std::vector<int64_t>{224 + 1407 + 66, 8 + 1407 + 66}));
  EXPECT_EQ(rows[1].name, "conv");
  EXPECT_EQ(rows[1].values, (std::vector<int64_t>{224, 8}));
  EXPECT_EQ(rows[2].name, "head");
  EXPECT_EQ(rows[3].name, "head.fc");
  EXPECT_EQ(rows[3].depth, 2);
  EXPECT_EQ(rows[4].name, "up");
  EXPECT_EQ(count_parameters(net, 1).size(), 4u);  // head.fc is deeper
  std::string table = format_module_table(rows, {"#parameters", "trainable"});
  EXPECT_NE(table.find("| model "), std::string::npos) << table;
  EXPECT_NE(table.find("  head.fc "), std::string::npos) << table;
  EXPECT_NE(table.find("1,697"), std::string::npos) << table;
}

TEST(ModelAnalysis, StateDictInPyTorchOrder) {
  TinyNet net;
  std::vector<std::string> names;
  for (const auto& [name, t] : ordered_state_dict(net))
    names.push_back(name + " " + shape_string(t));
  EXPECT_EQ(names,
            (std::vector<std::string>{"scale (3)", "conv.weight (8, 3, 3, 3)", "conv.bias (8)",
                                      "head.fc.weight (7, 200)", "head.fc.bias (7)",
                                      "up.weight (8, 2, 2, 2)", "up.bias (2)"}));
  EXPECT_EQ(shape_string(torch::zeros({})), "()");
  EXPECT_EQ(with_thousands_separators(44343216), "44,343,216");
  EXPECT_EQ(with_thousands_separators(999), "999");
  EXPECT_EQ(with_thousands_separators(-1000), "-1,000");
}

TEST(FlopCounter, CountsConvLinearAndTransposedConvByHand) {
  TinyNet net;
  at::Tensor x = torch::rand({2, 3, 10, 10});
  int64_t outside = 0;
  {
    FlopCounter counter(net);
    torch::NoGradGuard no_grad;
    net.forward(x);
    // conv: 2 images * 8*3*3*3 weights * 5*5 outputs; fc: 2*200 inputs * 7 outputs;
    // transposed conv: 2 images * 8*2*2*2 weights * 5*5 inputs.
    EXPECT_EQ(counter.by_module().at("conv"), 2 * 216 * 25);
    EXPECT_EQ(counter.by_module().at("head.fc"), 2 * 200 * 7);
    EXPECT_EQ(counter.by_module().at("up"), 2 * 64 * 25);
    EXPECT_EQ(counter.by_operator().at("conv"), 10800);
    EXPECT_EQ(counter.by_operator().at("linear"), 2800);
    EXPECT_EQ(counter.by_operator().at("conv_transpose"), 3200);
    EXPECT_EQ(counter.total(), 16800);
    auto rows = counter.rows(net, 1);
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[0].values[0], 16800);
    EXPECT_EQ(rows[2].name, "head");
    EXPECT_EQ(rows[2].values[0], 2800);
    // An op whose weight is not the model's is charged to the model itself.
    at::conv2d(x, torch::rand({4, 3, 1, 1}));
    EXPECT_EQ(counter.by_module().at(""), 2 * 12 * 100);
    outside = counter.total();
  }
  FlopCounter later(net);
  EXPECT_EQ(later.total(), 0);
  EXPECT_EQ(outside, 16800 + 2400);
}

// fvcore's count for a ResNet-50 body with the stride in the 3x3 conv, written out per layer.
int64_t resnet50_flops(int64_t side) {
  int64_t h = side / 2;
  int64_t flops = 3 * 64 * 49 * h * h;  // stem conv, stride 2
  h /= 2;                               // max pool
  int64_t in = 64;
  const int64_t blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t p = 64 << stage, stride = stage == 0 ? 1 : 2;
    const int64_t h_in = h;
    h /= stride;
    flops += in * p * h_in * h_in + 9 * p * p * h * h + p * 4 * p * h * h + in * 4 * p * h * h;
    flops += (blocks[stage] - 1) * (4 * p * p + 9 * p * p + 4 * p * p) * h * h;
    in = 4 * p;
  }
  return flops;
}

// Under CONV_ALGORITHM auto the maps run channels-last in eval mode, NCHW in training; direct runs
// them NCHW: the same convolutions either way, so the count is the same.
TEST(FlopCounter, ResNet50MatchesClosedFormUnderEitherConvAlgorithmAndLayout) {
  ResNet resnet(ResNetOptions().stride_in_1x1(false).out_features({"res5"}));
  const std::pair<layers::ConvAlgorithm, bool> runs[] = {{layers::ConvAlgorithm::kDirect, false},
                                                         {layers::ConvAlgorithm::kAuto, false},
                                                         {layers::ConvAlgorithm::kAuto, true}};
  for (auto [algorithm, training] : runs) {
    layers::set_conv_algorithm(algorithm);
    resnet.train(training);
    FlopCounter counter(resnet);
    torch::NoGradGuard no_grad;
    resnet.forward(torch::rand({1, 3, 224, 224}));
    std::cout << "[ flops ] ResNet-50 body at 224x224, "
              << (algorithm == layers::ConvAlgorithm::kAuto ? "auto" : "direct")
              << (training ? ", training" : "") << ": "
              << with_thousands_separators(counter.total()) << "\n";
    EXPECT_EQ(counter.total(), resnet50_flops(224));
    EXPECT_EQ(counter.by_operator().size(), 1u);
    EXPECT_FALSE(counter.by_module().count(""));  // every conv charged to its own module
  }
  layers::set_conv_algorithm(layers::ConvAlgorithm::kAuto);
}

// Under CONV_ALGORITHM auto the mask head's upsampling runs as ops::patchwise_conv_transpose2d,
// its gradients as matrix products: counted the same as libtorch's, forward only.
TEST(FlopCounter, TransposedConvCountedTheSameUnderEitherConvAlgorithm) {
  torch::nn::ConvTranspose2d deconv(torch::nn::ConvTranspose2dOptions(32, 16, 2).stride(2));
  at::Tensor x = torch::rand({3, 32, 14, 14}).requires_grad_(true);
  for (auto algorithm : {layers::ConvAlgorithm::kDirect, layers::ConvAlgorithm::kAuto}) {
    layers::set_conv_algorithm(algorithm);
    FlopCounter counter(*deconv);
    layers::conv_transpose2d(deconv, x).sum().backward();
    // 3 images * 32*16*2*2 weights * 14*14 inputs (forward ops only, as fvcore counts)
    EXPECT_EQ(counter.by_operator().at("conv_transpose"), 3 * 2048 * 196);
    EXPECT_EQ(counter.total(), 3 * 2048 * 196);
  }
  layers::set_conv_algorithm(layers::ConvAlgorithm::kAuto);
  // In inference too: counted the same, and charged to the module.
  FlopCounter counter(*deconv);
  torch::NoGradGuard no_grad;
  layers::conv_transpose2d(deconv, x.detach());
  EXPECT_EQ(counter.by_operator().at("conv_transpose"), 3 * 2048 * 196);
  EXPECT_EQ(counter.total(), 3 * 2048 * 196);
  EXPECT_EQ(counter.by_module().at(""), 3 * 2048 * 196);
}

}  // namespace
}  // namespace detkit::analysis
