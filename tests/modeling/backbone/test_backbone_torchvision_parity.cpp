// ResNet-50 (STRIDE_IN_1X1 False, FrozenBN) + FPN against torchvision's resnet50 body
// (IntermediateLayerGetter, FrozenBatchNorm2d with eps 1e-5, as detkit's) and
// FeaturePyramidNetwork with LastLevelMaxPool, given identical weights mapped by name.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <regex>

#include "detkit/modeling/backbone/fpn.h"
#include "detkit/modeling/backbone/resnet.h"
#include "tests/parity/oracle.h"

namespace detkit::modeling {
namespace {

// detkit's name (under the FPN backbone) -> torchvision's, with the oracle's "body."/"fpn."
// prefix; "" for a name without a counterpart.
std::string torchvision_name(const std::string& name) {
  static const std::vector<std::pair<std::regex, std::string>> rules = {
      {std::regex(R"(bottom_up\.stem\.conv1\.weight)"), "body.conv1.weight"},
      {std::regex(R"(bottom_up\.stem\.conv1\.norm\.(\w+))"), "body.bn1.$1"},
      {std::regex(R"(bottom_up\.res(\d)\.(\d+)\.conv(\d)\.weight)"),
       "body.layer$1.$2.conv$3.weight"},
      {std::regex(R"(bottom_up\.res(\d)\.(\d+)\.conv(\d)\.norm\.(\w+))"),
       "body.layer$1.$2.bn$3.$4"},
      {std::regex(R"(bottom_up\.res(\d)\.(\d+)\.shortcut\.weight)"),
       "body.layer$1.$2.downsample.0.weight"},
      {std::regex(R"(bottom_up\.res(\d)\.(\d+)\.shortcut\.norm\.(\w+))"),
       "body.layer$1.$2.downsample.1.$3"},
      {std::regex(R"(fpn_lateral(\d)\.(\w+))"), "fpn.inner_blocks.$1.0.$2"},
      {std::regex(R"(fpn_output(\d)\.(\w+))"), "fpn.layer_blocks.$1.0.$2"},
  };
  for (const auto& [pattern, replacement] : rules) {
    std::smatch m;
    if (!std::regex_match(name, m, pattern)) continue;
    std::string out = m.format(replacement);
    // detkit numbers stages res2..res5 and FPN levels 2..5; torchvision layer1..4 and 0..3.
    std::smatch digit;
    if (std::regex_search(out, digit, std::regex(R"(layer(\d))")))
      out.replace(digit.position(1), 1, std::to_string(std::stoi(digit[1]) - 1));
    if (std::regex_search(out, digit, std::regex(R"(_blocks\.(\d))")))
      out.replace(digit.position(1), 1, std::to_string(std::stoi(digit[1]) - 2));
    return out;
  }
  return "";
}

TEST(BackboneTorchvisionParity, ResNet50AndFpnMatchTorchvision) {
  DETKIT_REQUIRE_ORACLE();
  EXPECT_EQ(torchvision_name("bottom_up.res3.0.shortcut.norm.running_var"),
            "body.layer2.0.downsample.1.running_var");
  EXPECT_EQ(torchvision_name("fpn_output5.bias"), "fpn.layer_blocks.3.0.bias");
  torch::manual_seed(3);
  const std::vector<std::string> stages = {"res2", "res3", "res4", "res5"};
  auto resnet = std::make_shared<ResNet>(
      ResNetOptions().stride_in_1x1(false).freeze_at(0).out_features(stages));
  FPN fpn(resnet, FPNOptions().in_features(stages));
  fpn.eval();
  testing::TensorMap inputs;
  {
    // Random FrozenBN statistics and affine terms, and FPN biases, so none is an identity.
    torch::NoGradGuard no_grad;
    for (auto& b : fpn.named_buffers()) {
      at::Tensor& t = b.value();
      if (b.key().find("running_var") != std::string::npos)
        t.uniform_(0.5, 2.0);
      else if (b.key().find("norm.weight") != std::string::npos)
        t.uniform_(0.2, 0.6);
      else
        t.normal_(0.0, 0.1);
    }
    for (auto& p : fpn.named_parameters())
      if (p.key().find("bias") != std::string::npos) p.value().normal_(0.0, 0.1);
  }
  for (const auto& b : fpn.named_buffers()) inputs[torchvision_name(b.key())] = b.value();
  for (const auto& p : fpn.named_parameters())
    inputs[torchvision_name(p.key())] = p.value().detach();
  ASSERT_FALSE(inputs.count("")) << "a detkit weight has no torchvision name";
  at::Tensor x = torch::randn({2, 3, 128, 160});
  inputs["x"] = x;
  auto want = testing::run_oracle("oracle_backbone.py", "resnet_fpn", inputs);

  torch::NoGradGuard no_grad;
  FeatureMap features = fpn.forward(x);
  FeatureMap bottom = resnet->forward(x);
  for (const auto& s : stages) features[s] = bottom.at(s);
  for (const char* name : {"res2", "res3", "res4", "res5", "p2", "p3", "p4", "p5", "p6"}) {
    const at::Tensor& got = features.at(name);
    ASSERT_EQ(got.sizes(), want.at(name).sizes()) << name;
    double diff = (got - want.at(name)).abs().max().item<double>();
    std::cout << "[ torchvision parity ] " << name << " " << got.sizes() << " max abs diff " << diff
              << " (values up to " << got.abs().max().item<double>() << ")\n";
    EXPECT_LT(diff, 1e-4) << name;
  }
}

}  // namespace
}  // namespace detkit::modeling
