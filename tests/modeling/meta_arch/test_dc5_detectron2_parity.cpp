// Faster R-CNN R-50-DC5 (res5 dilated: stride 1, dilation 2; one RPN level and StandardROIHeads
// on res5) against Detectron2 itself (../shared/fixtures/detectron2_dc5): the fixture's weights
// and images give its res5 features, proposals, the box head's features and the predictor's
// outputs, the detections, the four training losses, the event scalars and the gradients.
#include <gtest/gtest.h>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "tests/modeling/meta_arch/parity_checks.h"
#include "tests/modeling/meta_arch/zoo_fixture.h"

namespace detkit::modeling {
namespace {

using structures::Instances;

struct DC5Fixture : testing::ZooFixture {
  DC5Fixture() : ZooFixture("detectron2_dc5") {}
};

TEST(DC5Parity, FeaturesProposalsAndBoxPredictionsMatchDetectron2) {
  DC5Fixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model();
  model->eval();
  at::NoGradGuard no_grad;
  const auto batch = f.batch(false);
  const structures::ImageList images = model->preprocess_image(batch);
  const FeatureMap features = model->backbone()->forward(images.tensor());
  const at::Tensor want_res5 = f.fx.outputs().at("features_res5");
  const double df = testing::max_abs_diff(features.at("res5").contiguous(), want_res5);
  std::cout << "[ detectron2 parity ] DC5 res5 features (stride 16, dilated): max abs diff " << df
            << " (values up to " << want_res5.abs().max().item<double>() << ")\n";
  EXPECT_LT(df, 1e-4);
  auto rpn =
      std::dynamic_pointer_cast<ProposalGenerator>(model->named_children()["proposal_generator"]);
  ASSERT_NE(rpn, nullptr);
  const std::vector<Instances> proposals = rpn->forward(images, features, nullptr).proposals;
  auto heads = model->named_children()["roi_heads"];
  auto box_head = std::dynamic_pointer_cast<BoxHead>(heads->named_children()["box_head"]);
  auto* predictor = heads->named_children()["box_predictor"]->as<FastRCNNOutputLayersImpl>();
  ASSERT_NE(box_head, nullptr);
  ASSERT_NE(predictor, nullptr);
  const ROIPooler pooler(pooler_options_from_config(f.fx.config(), "ROI_BOX_HEAD", {16}));
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    const at::Tensor want_boxes = f.fx.outputs().at("proposal_boxes_" + n);
    const at::Tensor boxes = proposals[i].boxes("proposal_boxes").tensor();
    const at::Tensor partner = testing::nearest_rows(boxes, want_boxes, 5e-3);
    const double db = testing::max_abs_diff(boxes.index_select(0, partner), want_boxes);
    const at::Tensor want_features = f.fx.outputs().at("roi_box_features_" + n);
    const at::Tensor rows = partner.narrow(0, 0, want_features.size(0));
    const at::Tensor box_features = box_head->forward(pooler(
        {features.at("res5").narrow(0, i, 1)}, {structures::Boxes(boxes.index_select(0, rows))}));
    const auto [logits, deltas] = predictor->forward(box_features);
    const double dx = testing::max_abs_diff(box_features, want_features);
    const double dl = testing::max_abs_diff(logits, f.fx.outputs().at("roi_cls_logits_" + n));
    const double dd = testing::max_abs_diff(deltas, f.fx.outputs().at("roi_box_deltas_" + n));
    std::cout << "[ detectron2 parity ] DC5 image " << i << ": " << boxes.size(0)
              << " proposals, max abs diff " << db << " px; box head features " << dx << ", logits "
              << dl << ", deltas " << dd << "\n";
    EXPECT_LT(db, 5e-3);  // the fixture README's tolerances (Detectron2's own spread)
    EXPECT_LT(dx, 1e-4);
    EXPECT_LT(dl, 1e-3);
    EXPECT_LT(dd, 1e-4);
  }
}

TEST(DC5Parity, DetectionsMatchDetectron2) {
  DC5Fixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model();
  model->eval();
  at::NoGradGuard no_grad;
  const auto results = model->inference(f.batch(false));
  ASSERT_EQ(results.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const at::Tensor want_boxes = f.fx.outputs().at("pred_boxes_" + std::to_string(i));
    // The README's tolerances: Detectron2 with other convolution kernels moves final boxes by
    // up to 6.1e-4 px; one box of image 1 is 1.1e-3 px from it here (5e-3 allowed).
    const std::string s = std::to_string(i);
    const auto m = testing::match_sets(
        {results[i].boxes("pred_boxes").tensor(), results[i].tensor("scores"),
         results[i].tensor("pred_classes")},
        {want_boxes, f.fx.outputs().at("scores_" + s), f.fx.outputs().at("pred_classes_" + s)},
        /*box_tol=*/5e-3, /*score_tol=*/1e-4);
    std::cout << "[ detectron2 parity ] DC5 image " << i << ": " << results[i].size()
              << " detections vs " << want_boxes.size(0) << ": " << m.summary() << "\n";
    EXPECT_EQ(results[i].size(), want_boxes.size(0)) << "image " << i;
    EXPECT_EQ(m.unexplained, 0) << "image " << i;
  }
}

TEST(DC5Parity, TrainingLossesScalarsAndGradientsMatchDetectron2) {
  DC5Fixture f;
  REQUIRE_FIXTURE(f);
  f.expect_training_matches("DC5", 4u, 9);
}

}  // namespace
}  // namespace detkit::modeling
