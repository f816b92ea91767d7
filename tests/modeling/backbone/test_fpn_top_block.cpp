// FPN's top blocks: LastLevelMaxPool (P6 = P5 subsampled) and LastLevelP6P7 from res5
// (Detectron2's RetinaNet) or from P5 (torchvision's): P6 = conv(in), P7 = conv(relu(P6)).
#include <gtest/gtest.h>

#include "detkit/modeling/backbone/fpn.h"
#include "detkit/modeling/backbone/resnet.h"
#include "detkit/utils/error.h"
#include "tests/modeling/meta_arch/small_model.h"

namespace detkit::modeling {
namespace {

std::shared_ptr<FPN> fpn(const std::string& top_block, const std::string& in_feature) {
  const config::CfgNode cfg =
      testing::small_config({"MODEL.RESNETS.OUT_FEATURES", "['res3', 'res4', 'res5']",
                             "MODEL.FPN.IN_FEATURES", "['res3', 'res4', 'res5']"});
  auto bottom_up = std::make_shared<ResNet>(resnet_options_from_config(cfg, 3));
  return std::make_shared<FPN>(
      bottom_up,
      fpn_options_from_config(cfg).top_block(top_block).top_block_in_feature(in_feature));
}

TEST(FPNTopBlock, P6P7FromRes5OrFromP5) {
  at::manual_seed(0);
  const at::Tensor images = at::randn({1, 3, 128, 96});
  for (const char* in_feature : {"res5", "p5"}) {
    auto net = fpn("p6p7", in_feature);
    net->eval();
    at::NoGradGuard no_grad;
    const FeatureMap out = net->forward(images);
    ASSERT_EQ(out.size(), 5u) << in_feature;  // p3..p7
    EXPECT_EQ(net->output_shape().at("p7").stride, 128);
    const FeatureMap bottom = net->bottom_up()->forward(images);
    auto params = net->named_parameters();
    const at::Tensor source = std::string(in_feature) == "res5" ? bottom.at("res5") : out.at("p5");
    const at::Tensor p6 =
        at::conv2d(source, params["top_block.p6.weight"], params["top_block.p6.bias"], 2, 1);
    const at::Tensor p7 =
        at::conv2d(at::relu(p6), params["top_block.p7.weight"], params["top_block.p7.bias"], 2, 1);
    EXPECT_TRUE(out.at("p6").equal(p6)) << in_feature;
    EXPECT_TRUE(out.at("p7").equal(p7)) << in_feature;
    EXPECT_EQ(params["top_block.p6.weight"].size(1), source.size(1)) << in_feature;
  }
  auto pooled = fpn("max_pool", "");
  EXPECT_EQ(pooled->output_shape().size(), 4u);  // p3..p6
  EXPECT_THROW(fpn("p6p7", "res9"), Error);
  EXPECT_THROW(fpn("p8", ""), Error);
}

}  // namespace
}  // namespace detkit::modeling
