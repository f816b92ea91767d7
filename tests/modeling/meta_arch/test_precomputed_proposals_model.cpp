// GeneralizedRCNN with MODEL.PROPOSAL_GENERATOR.NAME PrecomputedProposals (Detectron2's Fast
// R-CNN with MODEL.LOAD_PROPOSALS): given the proposals the RPN of the Mask R-CNN fixture makes,
// it detects exactly what that Mask R-CNN detects, and trains on its ROI heads' losses alone; an
// input without proposals is refused by name.
#include <gtest/gtest.h>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/modeling/proposal_generator/proposal_generator.h"
#include "tests/support/detectron2_fixture.h"
#include "tests/support/error_of.h"

namespace detkit::modeling {
namespace {

TEST(PrecomputedProposals, GiveTheDetectionsOfTheModelWhoseRpnMadeThem) {
  testing::Detectron2Fixture fx;
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  auto cfg = fx.config();
  auto full = build_generalized_rcnn(cfg);
  checkpoint::load_state_dict(*full, fx.weights());
  full->eval();
  cfg.set("MODEL.PROPOSAL_GENERATOR.NAME", "PrecomputedProposals");
  cfg.set("MODEL.LOAD_PROPOSALS", true);
  auto fast = build_generalized_rcnn(cfg);
  checkpoint::load_state_dict(*fast, fx.weights());  // the RPN's weights are left over
  EXPECT_EQ(fast->named_children().find("proposal_generator"), nullptr);
  fast->eval();
  at::NoGradGuard no_grad;
  std::vector<ModelInput> batch = fx.inference_batch();
  const auto images = full->preprocess_image(batch);
  const auto features = full->backbone()->forward(images.tensor());
  const auto proposals = full->proposals_of(batch, images, features, nullptr).proposals;
  auto with_proposals = batch;
  for (size_t i = 0; i < batch.size(); ++i) with_proposals[i].proposals = proposals[i];
  const auto want = full->inference(batch);
  const auto got = fast->inference(with_proposals);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    std::cout << "[ precomputed proposals ] image " << i << ": " << proposals[i].size()
              << " proposals in, " << got[i].size()
              << " detections (the full model: " << want[i].size() << ")\n";
    EXPECT_TRUE(
        at::equal(got[i].boxes("pred_boxes").tensor(), want[i].boxes("pred_boxes").tensor()));
    EXPECT_TRUE(at::equal(got[i].tensor("scores"), want[i].tensor("scores")));
    EXPECT_TRUE(at::equal(got[i].tensor("pred_masks"), want[i].tensor("pred_masks")));
  }
  testing::expect_contains(testing::error_of([&] { fast->inference(batch); }),
                           "has no proposals (MODEL.LOAD_PROPOSALS True");
}

}  // namespace
}  // namespace detkit::modeling
