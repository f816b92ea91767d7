// Mask R-CNN R-50-C4 (Res5ROIHeads) against Detectron2 itself (../shared/fixtures/detectron2_c4):
// the fixture's weights and images give its res4 features, proposals, the res5 box features and
// the box predictor's outputs, the detections, the 14x14 mask probabilities and pasted masks, the
// five training losses, the event scalars and the recorded gradients.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/modeling/roi_heads/res5_roi_heads.h"
#include "tests/modeling/meta_arch/parity_checks.h"
#include "tests/modeling/meta_arch/zoo_fixture.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::modeling {
namespace {

using structures::Instances;
using testing::ZooFixture;

struct C4Fixture : testing::ZooFixture {
  C4Fixture() : ZooFixture("detectron2_c4") {}
};

TEST(C4Parity, FeaturesProposalsAndBoxPredictionsMatchDetectron2) {
  C4Fixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model();
  model->eval();
  at::NoGradGuard no_grad;
  ASSERT_NE(dynamic_cast<Res5ROIHeads*>(model->named_children()["roi_heads"].get()), nullptr);
  const auto batch = f.batch(false);
  const structures::ImageList images = model->preprocess_image(batch);
  const FeatureMap features = model->backbone()->forward(images.tensor());
  ASSERT_EQ(features.size(), 1u);
  const at::Tensor want_res4 = f.fx.outputs().at("features_res4");
  const double df = testing::max_abs_diff(features.at("res4").contiguous(), want_res4);
  std::cout << "[ detectron2 parity ] C4 res4 features: max abs diff " << df << " (values up to "
            << want_res4.abs().max().item<double>() << ")\n";
  EXPECT_LT(df, 1e-4 * want_res4.abs().max().item<double>());

  auto rpn =
      std::dynamic_pointer_cast<ProposalGenerator>(model->named_children()["proposal_generator"]);
  ASSERT_NE(rpn, nullptr);
  const std::vector<Instances> proposals = rpn->forward(images, features, nullptr).proposals;
  // The box predictor's input and outputs for Detectron2's first 100 proposals of each image,
  // our rows paired with its by the proposal boxes (near-tied objectness may order them apart).
  auto heads = model->named_children()["roi_heads"];
  auto& res5 = *heads->named_children()["res5"]->as<torch::nn::Sequential>();
  auto* predictor = heads->named_children()["box_predictor"]->as<FastRCNNOutputLayersImpl>();
  ASSERT_NE(predictor, nullptr);
  const ROIPooler pooler(pooler_options_from_config(f.fx.config(), "ROI_BOX_HEAD", {16}));
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    const at::Tensor want_boxes = f.fx.outputs().at("proposal_boxes_" + n);
    const at::Tensor boxes = proposals[i].boxes("proposal_boxes").tensor();
    const at::Tensor partner = testing::nearest_rows(boxes, want_boxes, 1e-3);
    const double db = testing::max_abs_diff(boxes.index_select(0, partner), want_boxes);
    const at::Tensor want_features = f.fx.outputs().at("roi_box_features_" + n);
    const at::Tensor rows = partner.narrow(0, 0, want_features.size(0));
    const at::Tensor pooled = pooler({features.at("res4").narrow(0, i, 1)},
                                     {structures::Boxes(boxes.index_select(0, rows))});
    const at::Tensor box_features = res5.forward(pooled).mean({2, 3});
    const auto [logits, deltas] = predictor->forward(box_features);
    const double dx = testing::max_abs_diff(box_features, want_features);
    const double dl = testing::max_abs_diff(logits, f.fx.outputs().at("roi_cls_logits_" + n));
    const double dd = testing::max_abs_diff(deltas, f.fx.outputs().at("roi_box_deltas_" + n));
    const double fs = want_features.abs().max().item<double>();
    const double ls = f.fx.outputs().at("roi_cls_logits_" + n).abs().max().item<double>();
    const double ds = f.fx.outputs().at("roi_box_deltas_" + n).abs().max().item<double>();
    std::cout << "[ detectron2 parity ] C4 image " << i << ": " << boxes.size(0)
              << " proposals, max abs diff " << db << " px; res5 box features " << dx
              << " (values up to " << fs << "), logits " << dl << " (up to " << ls << "), deltas "
              << dd << " (up to " << ds << ")\n";
    EXPECT_LT(db, 1e-3);
    EXPECT_LT(dx, 1e-4 * fs);
    EXPECT_LT(dl, 1e-4 * ls);
    EXPECT_LT(dd, 1e-4 * ds);
  }
}

TEST(C4Parity, DetectionsAndMasksMatchDetectron2) {
  C4Fixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model();
  model->eval();
  at::NoGradGuard no_grad;
  const auto batch = f.batch(false);
  const auto results = model->inference(batch);
  ASSERT_EQ(results.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const std::string s = std::to_string(i);
    const Instances& r = results[i];
    const at::Tensor want_boxes = f.fx.outputs().at("pred_boxes_" + s);
    const auto m = testing::match_fixture_detections(r, f.fx.outputs(), i);
    const at::Tensor masks = r.tensor("pred_masks");
    const int64_t differing = testing::mask_pixels_differing(
        masks, f.meta["images"][i]["pred_mask_rles"], m.partner, batch[i].height, batch[i].width);
    const double fraction = double(differing) / double(std::max<int64_t>(masks.numel(), 1));
    std::cout << "[ detectron2 parity ] C4 image " << i << ": " << r.size() << " detections vs "
              << want_boxes.size(0) << ": " << m.summary() << "; mask pixels differing "
              << differing << " (" << 100 * fraction << "%)\n";
    EXPECT_EQ(r.size(), want_boxes.size(0)) << "image " << i;
    EXPECT_EQ(m.unexplained, 0) << "image " << i;
    EXPECT_LT(fraction, 1e-3);
  }
}

// The 14x14 mask probabilities before pasting (the mask head on res5 run again over the final
// boxes), for Detectron2's detections in its order.
TEST(C4Parity, MaskProbabilitiesOnTheFinalBoxesMatchDetectron2) {
  C4Fixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model();
  model->eval();
  at::NoGradGuard no_grad;
  const auto batch = f.batch(false);
  const structures::ImageList images = model->preprocess_image(batch);
  const FeatureMap features = model->backbone()->forward(images.tensor());
  auto heads = model->named_children()["roi_heads"];
  auto& res5 = *heads->named_children()["res5"]->as<torch::nn::Sequential>();
  auto mask_head = std::dynamic_pointer_cast<MaskHead>(heads->named_children()["mask_head"]);
  ASSERT_NE(mask_head, nullptr);
  const ROIPooler pooler(pooler_options_from_config(f.fx.config(), "ROI_BOX_HEAD", {16}));
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    Instances detections(images.image_sizes()[i].first, images.image_sizes()[i].second);
    detections.set("pred_boxes", structures::Boxes(f.fx.outputs().at("pred_boxes_input_" + n)));
    detections.set("pred_classes", f.fx.outputs().at("pred_classes_" + n));
    std::vector<Instances> list = {detections};
    mask_head->forward(res5.forward(pooler({features.at("res4").narrow(0, i, 1)},
                                           {detections.boxes("pred_boxes")})),
                       list);
    const at::Tensor want = f.fx.outputs().at("pred_mask_probs_" + n);
    const double d = testing::max_abs_diff(list[0].tensor("pred_masks"), want);
    std::cout << "[ detectron2 parity ] C4 image " << i << ": " << want.size(0)
              << " mask probability maps (14x14), max abs diff " << d << "\n";
    EXPECT_LT(d, 1e-4);
  }
}

TEST(C4Parity, TrainingLossesScalarsAndGradientsMatchDetectron2) {
  C4Fixture f;
  REQUIRE_FIXTURE(f);
  f.expect_training_matches("C4", 5u, 9);
}

}  // namespace
}  // namespace detkit::modeling
