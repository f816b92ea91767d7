// ResNet-50 + FPN against Detectron2 itself: the fixture's weights and inputs give the fixture's
// FPN features (../shared/fixtures/detectron2, made by Detectron2 on this libtorch).
#include <gtest/gtest.h>

#include "detkit/modeling/backbone/backbone.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::modeling {

TEST(BackboneParity, FpnFeaturesMatchDetectron2) {
  testing::Detectron2Fixture fx;
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  config::CfgNode cfg = fx.config();
  auto backbone = build_backbone(cfg);
  backbone->eval();
  auto report = checkpoint::load_state_dict(*backbone, fx.weights_under("backbone."), "backbone.");
  EXPECT_TRUE(report.complete()) << report.summary();
  auto batch = fx.normalized_inputs(cfg, backbone->size_divisibility());
  auto padded = fx.outputs().at("padded_batch_shape");
  EXPECT_EQ(batch.tensor().sizes().vec(),
            std::vector<int64_t>(padded.data_ptr<int64_t>(), padded.data_ptr<int64_t>() + 4));

  at::NoGradGuard no_grad;
  FeatureMap features = backbone->forward(batch.tensor());
  for (const char* level : {"p2", "p3", "p4", "p5", "p6"}) {
    const at::Tensor& want = fx.outputs().at(std::string("features_") + level);
    const at::Tensor& got = features.at(level);
    ASSERT_EQ(got.sizes(), want.sizes()) << level;
    double diff = (got - want).abs().max().item<double>();
    std::cout << "[ detectron2 parity ] " << level << " " << got.sizes()
              << " max abs diff " << diff << " (values up to "
              << want.abs().max().item<double>() << ")\n";
    EXPECT_LT(diff, 1e-4) << level;
  }
}

TEST(BackboneParity, ParameterNamesAndFreezing) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) + "/configs/Base-RCNN-FPN.yaml");
  auto backbone = build_backbone(cfg);
  auto names = checkpoint::state_dict(*backbone);
  EXPECT_TRUE(names.count("bottom_up.stem.conv1.weight"));
  EXPECT_TRUE(names.count("bottom_up.res5.2.conv3.norm.running_var"));
  EXPECT_TRUE(names.count("fpn_lateral2.weight"));
  EXPECT_TRUE(names.count("fpn_output5.bias"));
  int64_t trainable = 0, total = 0;
  for (const auto& p : backbone->named_parameters()) {
    total += p.value().numel();
    if (p.value().requires_grad()) trainable += p.value().numel();
    bool frozen_stage = p.key().rfind("bottom_up.stem", 0) == 0 || p.key().rfind("bottom_up.res2", 0) == 0;
    EXPECT_EQ(p.value().requires_grad(), !frozen_stage) << p.key();
  }
  // Detectron2's R-50-FPN backbone: 26,799,296 parameters with FrozenBN (conv weights only in
  // the ResNet, biases in the FPN).
  EXPECT_EQ(total, 26799296);
  auto shapes = backbone->output_shape();
  EXPECT_EQ(shapes.size(), 5u);
  EXPECT_EQ(shapes.at("p6").stride, 64);
  EXPECT_EQ(backbone->size_divisibility(), 32);
}

}  // namespace detkit::modeling
