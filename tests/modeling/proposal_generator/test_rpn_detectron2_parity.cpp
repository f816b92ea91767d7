// RPN proposals against Detectron2 itself (test mode), on the fixture's weights and images.
#include <gtest/gtest.h>

#include "detkit/modeling/backbone/backbone.h"
#include "detkit/modeling/proposal_generator/proposal_generator.h"
#include "tests/support/detectron2_fixture.h"
#include "tests/support/matched_sets.h"

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
    // Matched as sets: near-tied logits (~1e-5 apart) swap ranks between CPUs.
    const auto m =
        testing::match_sets({p.boxes("proposal_boxes").tensor(), p.tensor("objectness_logits")},
                            {want_boxes, want_logits}, /*box_tol=*/1e-3,
                            /*score_tol=*/1e-4);
    std::cout << "[ detectron2 parity ] image " << i << ": " << p.size() << " proposals vs "
              << want_boxes.size(0) << ": " << m.summary() << "\n";
    EXPECT_EQ(p.size(), want_boxes.size(0)) << "image " << i;
    EXPECT_EQ(m.unexplained, 0) << "image " << i;
    EXPECT_LE(m.unmatched_reference.size(), static_cast<size_t>(want_boxes.size(0) / 100));
  }
}

}  // namespace detkit::modeling
