// torchvision ImageNet ResNet weights land on Detectron2's backbone names.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/checkpoint/checkpointer.h"
#include "detkit/checkpoint/torch_file.h"
#include "detkit/checkpoint/torchvision_resnet.h"
#include "detkit/config/defaults.h"
#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "tests/checkpoint/checkpoint_oracle.h"

namespace detkit::checkpoint {
namespace {

TEST(TorchvisionResnet, NamesMapOntoDetectron2) {
  const std::string p = "backbone.bottom_up.";
  EXPECT_EQ(torchvision_resnet_name("conv1.weight", p), p + "stem.conv1.weight");
  EXPECT_EQ(torchvision_resnet_name("bn1.running_var", p), p + "stem.conv1.norm.running_var");
  EXPECT_EQ(torchvision_resnet_name("layer1.0.conv3.weight", p), p + "res2.0.conv3.weight");
  EXPECT_EQ(torchvision_resnet_name("layer2.3.bn2.bias", p), p + "res3.3.conv2.norm.bias");
  EXPECT_EQ(torchvision_resnet_name("layer4.0.downsample.0.weight", p),
            p + "res5.0.shortcut.weight");
  EXPECT_EQ(torchvision_resnet_name("layer3.0.downsample.1.running_mean", p),
            p + "res4.0.shortcut.norm.running_mean");
  EXPECT_EQ(torchvision_resnet_name("fc.weight", p), "fc.weight");
  EXPECT_EQ(torchvision_resnet_name("layer5.0.conv1.weight", p), "layer5.0.conv1.weight");
  EXPECT_TRUE(is_torchvision_resnet({{"conv1.weight", {}}, {"layer1.0.conv1.weight", {}}}));
  EXPECT_FALSE(is_torchvision_resnet({{"backbone.bottom_up.stem.conv1.weight", {}}}));
}

TEST(TorchvisionResnet, Resnet50WeightsLoadIntoTheFpnBackbone) {
  if (!testing::have_python_torch()) GTEST_SKIP() << "python3-torchvision not found";
  testing::TempDir tmp("torchvision_r50");
  const std::string path = tmp.path("resnet50.pth");
  ASSERT_EQ(testing::run_checkpoint_oracle({"resnet50", path}, tmp), "");

  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) + "/configs/Base-RCNN-FPN.yaml");
  cfg.merge_from_list({"MODEL.RESNETS.STRIDE_IN_1X1", "False"});
  auto model = modeling::build_model(cfg);
  Checkpointer checkpointer(model, tmp.path("out"));
  const LoadedCheckpoint loaded = checkpointer.resume_or_load(path, /*resume=*/false);

  EXPECT_EQ(loaded.report.unexpected, (std::vector<std::string>{"fc.bias", "fc.weight"}));
  EXPECT_TRUE(loaded.report.mismatched.empty()) << loaded.report.summary();
  for (const std::string& name : loaded.report.missing)
    EXPECT_EQ(name.rfind("backbone.bottom_up.", 0), std::string::npos) << name;

  const TensorDict own = state_dict(*model);
  const TensorDict torchvision = model_weights_from(load_torch_file(path), path);
  size_t bottom_up = 0, checked = 0;
  for (const auto& [name, tensor] : own) bottom_up += name.rfind("backbone.bottom_up.", 0) == 0;
  for (const auto& [name, tensor] : torchvision) {
    const std::string mapped = torchvision_resnet_name(name, "backbone.bottom_up.");
    if (!own.count(mapped)) continue;
    EXPECT_TRUE(own.at(mapped).equal(tensor)) << name << " -> " << mapped;
    ++checked;
  }
  EXPECT_EQ(checked, bottom_up);  // every backbone.bottom_up tensor got its value
  EXPECT_EQ(loaded.report.loaded, bottom_up);
  EXPECT_GT(bottom_up, 250u);
}

}  // namespace
}  // namespace detkit::checkpoint
