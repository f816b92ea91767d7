// DeformBottleneckBlock against Detectron2's own (../shared/fixtures/deform_conv: blocks block0, v2
// with 2 deformable groups and stride 2 in the 3x3, and block1, v1 with dilation 2 and the stride
// in the 1x1): its state dict loads under Detectron2's names, and the output and the gradients of
// the input and every parameter match; Detectron2's deformable Mask R-CNN has its state-dict names
// and shapes; the offsets start at zero, so a new block computes what the plain bottleneck does.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/config/defaults.h"
#include "detkit/modeling/backbone/resnet_blocks.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "tests/support/error_of.h"
#include "tests/support/tensor_compare.h"

namespace detkit::modeling {
namespace {

const std::string kDeformFixture = std::string(DETKIT_SHARED_DIR) + "/fixtures/deform_conv/";

BlockOptions block_options(const nlohmann::json& kwargs) {
  BlockOptions o;
  o.in_channels = kwargs["in_channels"];
  o.out_channels = kwargs["out_channels"];
  o.bottleneck_channels = kwargs["bottleneck_channels"];
  o.stride = kwargs["stride"];
  o.stride_in_1x1 = kwargs["stride_in_1x1"];
  o.dilation = kwargs["dilation"];
  o.num_groups = kwargs["num_groups"];
  o.norm = kwargs["norm"];
  o.deform_modulated = kwargs["deform_modulated"];
  o.deform_num_groups = kwargs["deform_num_groups"];
  return o;
}

TEST(DeformBottleneckBlock, MatchesDetectron2sBlockForwardAndBackward) {
  if (!std::filesystem::exists(kDeformFixture + "outputs.pth"))
    GTEST_SKIP() << "fixture absent: " << kDeformFixture;
  const auto meta = nlohmann::json::parse(std::ifstream(kDeformFixture + "outputs.json"));
  const auto tensors = checkpoint::load_plain_tensor_dict(kDeformFixture + "outputs.pth");
  for (int b = 0; b < 2; ++b) {
    const std::string name = "block" + std::to_string(b);
    DeformBottleneckBlock block(block_options(meta["blocks"][b]["kwargs"]));
    checkpoint::TensorDict state;
    for (const auto& [key, value] : tensors)
      if (key.rfind(name + ".state.", 0) == 0) state[key.substr(name.size() + 7)] = value;
    const auto report = checkpoint::load_state_dict(*block, state);
    EXPECT_TRUE(report.complete()) << name << ": " << report.summary();
    // The parameters Detectron2 has, in its order.
    std::vector<std::string> parameters;
    for (const auto& p : block->named_parameters()) parameters.push_back(p.key());
    EXPECT_EQ(parameters, meta["blocks"][b]["parameters"].get<std::vector<std::string>>()) << name;

    const at::Tensor input = tensors.at(name + ".input").clone().requires_grad_(true);
    const at::Tensor output = block->forward(input);
    (output * tensors.at(name + ".grad_output")).sum().backward();
    double worst = testing::relative_error(output, tensors.at(name + ".output"));
    std::string worst_name = "output";
    const double dx = testing::relative_error(input.grad(), tensors.at(name + ".grad_input"));
    if (dx > worst) worst = dx, worst_name = "grad_input";
    int gradients = 0;
    for (const auto& p : block->named_parameters()) {
      const at::Tensor want = tensors.at(name + ".grad." + p.key());
      const double d = testing::relative_error(p.value().grad(), want);
      if (d > worst) worst = d, worst_name = "grad." + p.key();
      ++gradients;
    }
    std::cout << "[ detectron2 parity ] DeformBottleneckBlock " << name << " ("
              << (meta["blocks"][b]["kwargs"]["deform_modulated"].get<bool>() ? "v2" : "v1")
              << "): output, input gradient and " << gradients
              << " parameter gradients; largest difference relative to each tensor's largest value "
              << worst << " (" << worst_name << ")\n";
    EXPECT_LT(worst, 1e-5) << name << " " << worst_name;  // the fixture README's tolerance
  }
}

TEST(DeformBottleneckBlock, DeformableMaskRCNNHasDetectron2sStateDict) {
  if (!std::filesystem::exists(kDeformFixture + "outputs.json"))
    GTEST_SKIP() << "fixture absent: " << kDeformFixture;
  const auto meta = nlohmann::json::parse(std::ifstream(kDeformFixture + "outputs.json"));
  const auto& structure = meta["model_structure"];
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) + "/configs/" +
                      structure["config_file"].get<std::string>());
  const auto options = structure["options"].get<std::vector<std::string>>();
  cfg.merge_from_list(options);
  cfg.set("MODEL.WEIGHTS", "");
  auto model = build_model(cfg);
  std::map<std::string, std::vector<int64_t>> ours;
  for (const auto& p : model->named_parameters()) ours[p.key()] = p.value().sizes().vec();
  for (const auto& p : model->named_buffers()) ours[p.key()] = p.value().sizes().vec();
  std::map<std::string, std::vector<int64_t>> want;
  for (const auto& [key, shape] : structure["state_dict"].items())
    want[key] = shape.get<std::vector<int64_t>>();
  EXPECT_EQ(want.size(), structure["num_state_dict_keys"].get<size_t>());
  size_t missing = 0, differing = 0;
  for (const auto& [key, shape] : want) {
    auto it = ours.find(key);
    if (it == ours.end())
      ++missing, ADD_FAILURE() << "missing " << key;
    else if (it->second != shape)
      ++differing, ADD_FAILURE() << key << " shape differs";
  }
  for (const auto& [key, shape] : ours)
    if (!want.count(key)) ADD_FAILURE() << "extra " << key;
  std::cout << "[ detectron2 parity ] deformable Mask R-CNN R-50-FPN: " << ours.size()
            << " state-dict entries vs Detectron2's " << want.size() << ", " << missing
            << " missing, " << differing << " of another shape\n";
  // Every conv2_offset starts at zero.
  for (const auto& p : model->named_parameters())
    if (p.key().find("conv2_offset") != std::string::npos)
      EXPECT_EQ(p.value().abs().max().item<double>(), 0.0) << p.key();
}

TEST(DeformBottleneckBlock, ANewBlockComputesWhatTheBottleneckWithItsWeightsDoes) {
  torch::manual_seed(5);
  BlockOptions o;
  o.in_channels = 16, o.out_channels = 32, o.bottleneck_channels = 8, o.stride = 2;
  o.norm = "FrozenBN", o.deform_modulated = false;
  DeformBottleneckBlock deform(o);
  BottleneckBlock plain(o);
  checkpoint::TensorDict state;
  for (const auto& p : deform->named_parameters()) state[p.key()] = p.value().detach();
  for (const auto& p : deform->named_buffers()) state[p.key()] = p.value().detach();
  state.erase("conv2_offset.weight");
  state.erase("conv2_offset.bias");
  checkpoint::load_state_dict(*plain, state);
  torch::NoGradGuard no_grad;
  const at::Tensor x = torch::randn({2, 16, 9, 11});
  const double d = testing::max_abs_diff(deform->forward(x), plain->forward(x));
  std::cout << "[ deform ] zero offsets vs the plain bottleneck: max abs diff " << d << "\n";
  EXPECT_LT(d, 1e-5);
}

TEST(DeformBottleneckBlock, DeformableResNet18IsRefusedByName) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_list({"MODEL.RESNETS.DEPTH", "18", "MODEL.RESNETS.RES2_OUT_CHANNELS", "64",
                       "MODEL.RESNETS.DEFORM_ON_PER_STAGE", "[False, True, True, True]"});
  testing::expect_contains(testing::error_of([&] { build_model(cfg); }),
                           "MODEL.RESNETS.DEFORM_ON_PER_STAGE is not supported for ResNet-18/34");
  cfg = config::get_cfg();
  cfg.merge_from_list({"MODEL.RESNETS.DEFORM_ON_PER_STAGE", "[True, True]"});
  testing::expect_contains(testing::error_of([&] { build_model(cfg); }),
                           "MODEL.RESNETS.DEFORM_ON_PER_STAGE must be 4 booleans");
}

}  // namespace
}  // namespace detkit::modeling
