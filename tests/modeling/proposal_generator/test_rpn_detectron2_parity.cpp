// RPN proposals against Detectron2 itself (test mode), on the fixture's weights and images.
#include <gtest/gtest.h>

#include "detkit/modeling/backbone/backbone.h"
#include "detkit/modeling/proposal_generator/proposal_generator.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::modeling {

TEST(RPNParity, ProposalsMatchDetectron2) {
  testing::Detectron2Fixture fx;
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  auto cfg = fx.config();
  auto backbone = build_backbone(cfg);
  auto rpn = build_proposal_generator(cfg, backbone->output_shape());
  backbone->eval();
  rpn->eval();
  auto r1 = checkpoint::load_state_dict(*backbone, fx.weights_under("backbone."), "backbone.");
  auto r2 = checkpoint::load_state_dict(*rpn, fx.weights_under("proposal_generator."),
                                        "proposal_generator.");
  EXPECT_TRUE(r1.complete()) << r1.summary();
  EXPECT_TRUE(r2.complete()) << r2.summary();
  auto images = fx.normalized_inputs(cfg, backbone->size_divisibility());
  at::NoGradGuard no_grad;
  auto out = rpn->forward(images, backbone->forward(images.tensor()), nullptr);
  ASSERT_EQ(out.proposals.size(), 2u);
  EXPECT_TRUE(out.losses.empty());
  for (int i = 0; i < 2; ++i) {
    const auto& p = out.proposals[i];
    at::Tensor want_boxes = fx.outputs().at("proposal_boxes_" + std::to_string(i));
    at::Tensor want_logits = fx.outputs().at("proposal_logits_" + std::to_string(i));
    at::Tensor boxes = p.boxes("proposal_boxes").tensor();
    at::Tensor logits = p.tensor("objectness_logits");
    ASSERT_EQ(boxes.sizes(), want_boxes.sizes()) << "image " << i;
    double box_diff = (boxes - want_boxes).abs().max().item<double>();
    double logit_diff = (logits - want_logits).abs().max().item<double>();
    std::cout << "[ detectron2 parity ] image " << i << ": " << boxes.size(0)
              << " proposals, max abs diff boxes " << box_diff << " px, logits " << logit_diff
              << "\n";
    EXPECT_LT(box_diff, 1e-3);
    EXPECT_LT(logit_diff, 1e-4);
  }
}

}  // namespace detkit::modeling
