// ProposalNetwork (RPN only, R-50-FPN) against Detectron2 itself
// (../shared/fixtures/detectron2_rpn): the fixture's weights and images give its FPN features,
// raw RPN outputs, the proposals before and after rescaling to the original images
// (POST_NMS_TOPK_TEST 2000: 1725 and 1986 of them), the two training losses, the event scalars
// and the gradients.
#include <gtest/gtest.h>

#include "detkit/modeling/meta_arch/proposal_network.h"
#include "detkit/modeling/proposal_generator/rpn.h"
#include "tests/modeling/meta_arch/parity_checks.h"
#include "tests/modeling/meta_arch/zoo_fixture.h"

namespace detkit::modeling {
namespace {

using structures::Instances;

struct RpnFixture : testing::ZooFixture {
  RpnFixture() : ZooFixture("detectron2_rpn") {}
};

// Ours against the fixture's proposals: boxes to 5e-3 px and logits to 1e-4, rows paired by
// nearest box (the README: entries whose logits differ by under 5e-5 may come in either order).
void expect_proposals_match(const at::Tensor& boxes, const at::Tensor& logits,
                            const at::Tensor& want_boxes, const at::Tensor& want_logits,
                            const std::string& label) {
  ASSERT_EQ(boxes.size(0), want_boxes.size(0)) << label;
  const at::Tensor partner = testing::nearest_rows(boxes, want_boxes, 5e-3);
  const double db = testing::max_abs_diff(boxes.index_select(0, partner), want_boxes);
  const double dl = testing::max_abs_diff(logits.index_select(0, partner), want_logits);
  const int64_t moved =
      partner.ne(at::arange(partner.size(0), partner.options())).sum().item<int64_t>();
  std::cout << "[ detectron2 parity ] RPN-only " << label << ": " << boxes.size(0)
            << " proposals, max abs diff " << db << " px, logits " << dl << "; " << moved
            << " in another order\n";
  EXPECT_LT(db, 5e-3) << label;
  EXPECT_LT(dl, 1e-4) << label;
  if (moved > 0) {  // only near-ties may swap
    const at::Tensor swapped = partner.ne(at::arange(partner.size(0), partner.options()));
    const double gap = testing::max_abs_diff(logits.index({swapped}),
                                             logits.index_select(0, partner).index({swapped}));
    EXPECT_LT(gap, 5e-5) << label;
  }
}

TEST(RpnOnlyParity, FeaturesRpnOutputsAndProposalsMatchDetectron2) {
  RpnFixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model<ProposalNetwork>();
  model->eval();
  at::NoGradGuard no_grad;
  const auto batch = f.batch(false);
  const structures::ImageList images = model->preprocess_image(batch);
  const FeatureMap features = model->backbone()->forward(images.tensor());
  double df = 0;
  for (const char* level : {"p2", "p3", "p4", "p5", "p6"})
    df = std::max(df, testing::max_abs_diff(features.at(level).contiguous(),
                                            f.fx.outputs().at(std::string("features_") + level)));
  std::cout << "[ detectron2 parity ] RPN-only FPN features p2-p6: max abs diff " << df << "\n";
  EXPECT_LT(df, 1e-4);
  const std::vector<Instances> proposals =
      model->proposal_generator()->forward(images, features, nullptr).proposals;
  ASSERT_EQ(proposals.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    expect_proposals_match(
        proposals[i].boxes("proposal_boxes").tensor(), proposals[i].tensor("objectness_logits"),
        f.fx.outputs().at("proposal_boxes_input_" + n),
        f.fx.outputs().at("proposal_logits_input_" + n), "image " + n + " (input size)");
  }
}

TEST(RpnOnlyParity, InferenceGivesDetectron2sProposalsInTheOriginalImageSize) {
  RpnFixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model<ProposalNetwork>();
  model->eval();
  at::NoGradGuard no_grad;
  const auto results = model->inference(f.batch(false));
  ASSERT_EQ(results.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    EXPECT_EQ(results[i].image_height(), f.meta["images"][i]["height"].get<int64_t>());
    EXPECT_FALSE(results[i].has("pred_boxes"));
    expect_proposals_match(results[i].boxes("proposal_boxes").tensor(),
                           results[i].tensor("objectness_logits"),
                           f.fx.outputs().at("proposal_boxes_" + n),
                           f.fx.outputs().at("proposal_logits_" + n), "image " + n);
  }
}

TEST(RpnOnlyParity, TrainingLossesScalarsAndGradientsMatchDetectron2) {
  RpnFixture f;
  REQUIRE_FIXTURE(f);
  f.expect_training_matches<ProposalNetwork>("RPN-only", 2u, 8);
}

}  // namespace
}  // namespace detkit::modeling
