// MODEL.RPN.HEAD_NAME and MODEL.ANCHOR_GENERATOR.NAME are registries: a head or an anchor
// generator registered by name is what build_model puts in the RPN, and an unknown name is an
// error listing the registered ones.
#include <gtest/gtest.h>

#include "detkit/modeling/anchor_generator.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "detkit/modeling/proposal_generator/rpn_head.h"
#include "detkit/utils/error.h"
#include "tests/modeling/meta_arch/small_model.h"

namespace detkit::modeling {
namespace {

// A StandardRPNHead that counts its calls: proof that build_model used the registered name.
int g_counting_head_calls = 0;
class CountingRPNHead : public StandardRPNHeadImpl {
 public:
  using StandardRPNHeadImpl::StandardRPNHeadImpl;
  std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> forward(
      const std::vector<at::Tensor>& features) override {
    ++g_counting_head_calls;
    return StandardRPNHeadImpl::forward(features);
  }
};
DETKIT_REGISTER_RPN_HEAD(CountingRPNHead, [](const config::CfgNode&, int64_t in_channels,
                                             int64_t num_anchors, int64_t box_dim) {
  return std::make_shared<CountingRPNHead>(
      StandardRPNHeadOptions(in_channels, num_anchors).box_dim(box_dim));
});

// Two anchors per location (sizes 32 and 64, ratio 1) on every level, whatever the config says.
DETKIT_REGISTER_ANCHOR_GENERATOR(TwoSquareAnchors, [](const config::CfgNode&,
                                                      const std::vector<int64_t>& strides) {
  std::vector<int64_t> s = strides;
  return std::make_shared<DefaultAnchorGeneratorImpl>(
      DefaultAnchorGeneratorOptions({{32, 64}}, {{1.0}}, s).offset(0.0));
});

TEST(RPNRegistries, TheNamedHeadAndAnchorGeneratorAreBuilt) {
  const config::CfgNode cfg = testing::small_config(
      {"MODEL.RPN.HEAD_NAME", "CountingRPNHead", "MODEL.ANCHOR_GENERATOR.NAME", "TwoSquareAnchors"});
  auto model = build_model(cfg);
  const auto params = model->named_parameters();
  // Two anchors per location: objectness has 2 output channels (the config's 3 ratios would give 3).
  ASSERT_TRUE(params.contains("proposal_generator.rpn_head.objectness_logits.weight"));
  EXPECT_EQ(params["proposal_generator.rpn_head.objectness_logits.weight"].size(0), 2);
  EXPECT_EQ(params["proposal_generator.rpn_head.anchor_deltas.weight"].size(0), 8);
  model->eval();
  g_counting_head_calls = 0;
  model->inference(testing::small_batch());
  EXPECT_EQ(g_counting_head_calls, 1);
}

void expect_unknown(const std::string& key, const std::string& value, const std::string& listed) {
  const config::CfgNode cfg = testing::small_config({key, value});
  try {
    build_model(cfg);
    ADD_FAILURE() << key << " " << value << " was built";
  } catch (const Error& e) {
    const std::string message = e.what();
    std::cout << "[ registry ] " << message << "\n";
    EXPECT_NE(message.find(key), std::string::npos) << message;
    EXPECT_NE(message.find("'" + value + "'"), std::string::npos) << message;
    EXPECT_NE(message.find(listed), std::string::npos) << message;
  }
}

TEST(RPNRegistries, AnUnknownNameListsTheRegisteredOnes) {
  expect_unknown("MODEL.RPN.HEAD_NAME", "StandardRPNHed", "StandardRPNHead");
  expect_unknown("MODEL.ANCHOR_GENERATOR.NAME", "RotatedAnchorGenerator", "DefaultAnchorGenerator");
}

}  // namespace
}  // namespace detkit::modeling
