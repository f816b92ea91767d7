// Cascade Mask R-CNN against Detectron2 itself (../shared/fixtures/detectron2_cascade): the
// fixture's weights and images give its per-stage boxes and outputs, detections (the stages'
// mean scores), masks, the nine training losses and the recorded gradients.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/layers/conv2d.h"
#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/modeling/roi_heads/cascade_rcnn.h"
#include "tests/modeling/meta_arch/fixture_targets.h"
#include "tests/modeling/meta_arch/parity_checks.h"
#include "tests/support/scalar_parity.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::modeling {
namespace {

using structures::Instances;

struct CascadeFixture {
  testing::Detectron2Fixture fx;
  nlohmann::json meta;
  CascadeFixture() {
    fx.dir = std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_cascade/";
    if (fx.present()) meta = nlohmann::json::parse(std::ifstream(fx.dir + "outputs.json"));
  }
  std::shared_ptr<GeneralizedRCNN> model() {
    auto model = build_generalized_rcnn(fx.config());
    auto report = checkpoint::load_state_dict(*model, fx.weights());
    EXPECT_TRUE(report.complete()) << report.summary();
    return model;
  }
  std::vector<ModelInput> batch(bool with_targets) {
    const nlohmann::json coco = nlohmann::json::parse(std::ifstream(
        std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_val2017.json"));
    std::vector<ModelInput> batch(2);
    for (int i = 0; i < 2; ++i) {
      const auto& m = meta["images"][i];
      batch[i].image = fx.outputs().at("input_tensor_" + std::to_string(i));
      batch[i].height = m["height"];
      batch[i].width = m["width"];
      if (with_targets)
        batch[i].instances =
            testing::fixture_targets(coco, m["image_id"], m["height"], m["width"],
                                     batch[i].image.size(1), batch[i].image.size(2));
    }
    return batch;
  }
};

#define REQUIRE_FIXTURE(f) \
  if (!(f).fx.present()) GTEST_SKIP() << "fixture absent: " << (f).fx.dir

TEST(CascadeParity, StageBoxesAndOutputsMatchDetectron2) {
  CascadeFixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model();
  model->eval();
  at::NoGradGuard no_grad;
  auto* cascade = dynamic_cast<CascadeROIHeads*>(model->named_children()["roi_heads"].get());
  ASSERT_NE(cascade, nullptr);
  ASSERT_EQ(cascade->num_stages(), 3u);
  const auto batch = f.batch(false);
  const structures::ImageList images = model->preprocess_image(batch);
  const FeatureMap features = model->backbone()->forward(images.tensor());
  auto rpn =
      std::dynamic_pointer_cast<ProposalGenerator>(model->named_children()["proposal_generator"]);
  ASSERT_NE(rpn, nullptr);
  std::vector<Instances> proposals = rpn->forward(images, features, nullptr).proposals;
  const std::vector<at::Tensor> maps =
      select_features(features, f.fx.config().get_string_list("MODEL.ROI_HEADS.IN_FEATURES"));
  // Each stage's rows follow the proposals' order, which near-tied objectness may swap between
  // CPUs: pair our rows with Detectron2's by the proposal boxes, then compare pair by pair.
  std::vector<at::Tensor> partner;
  for (int i = 0; i < 2; ++i)
    partner.push_back(testing::nearest_rows(
        proposals[i].boxes("proposal_boxes").tensor(),
        f.fx.outputs().at("stage0_proposal_boxes_" + std::to_string(i)), 1e-3));
  std::vector<Instances> stage_proposals = proposals;
  for (size_t k = 0; k < 3; ++k) {
    const std::string s = std::to_string(k);
    auto predictions = cascade->run_stage(maps, stage_proposals, k);
    const auto counts = std::vector<int64_t>{stage_proposals[0].size(), stage_proposals[1].size()};
    auto logits = predictions.first.split_with_sizes(counts);
    auto deltas = predictions.second.split_with_sizes(counts);
    for (int i = 0; i < 2; ++i) {
      const std::string n = std::to_string(i);
      const at::Tensor want_boxes = f.fx.outputs().at("stage" + s + "_proposal_boxes_" + n);
      const double db = testing::max_abs_diff(
          stage_proposals[i].boxes("proposal_boxes").tensor().index_select(0, partner[i]),
          want_boxes);
      // Logits and deltas: recorded for the first 200 of Detectron2's rows.
      const at::Tensor want_logits = f.fx.outputs().at("stage" + s + "_cls_logits_" + n);
      const at::Tensor want_deltas = f.fx.outputs().at("stage" + s + "_box_deltas_" + n);
      const at::Tensor rows = partner[i].narrow(0, 0, want_logits.size(0));
      // Held to 1e-4 of their largest value, as gradients are (parity_checks.h): the logits
      // (up to 10) measured 1.1e-4 apart under OPENBLAS_CORETYPE=Haswell on AMD EPYC Zen 5.
      const double dl = testing::max_abs_diff(logits[i].index_select(0, rows), want_logits);
      const double dd = testing::max_abs_diff(deltas[i].index_select(0, rows), want_deltas);
      const double logit_scale = want_logits.abs().max().item<double>();
      const double delta_scale = want_deltas.abs().max().item<double>();
      std::cout << "[ detectron2 parity ] cascade stage " << k << " image " << i << ": "
                << want_boxes.size(0) << " boxes, max abs diff " << db << " px; logits " << dl
                << " (values up to " << logit_scale << "), deltas " << dd << " (values up to "
                << delta_scale << ")\n";
      EXPECT_LT(db, 1e-3);
      EXPECT_LT(dl, 1e-4 * logit_scale);
      EXPECT_LT(dd, 1e-4 * delta_scale);
    }
    if (k < 2)
      stage_proposals = cascade->proposals_from_boxes(
          cascade->predict_boxes(predictions, stage_proposals, k), proposals);
  }
}

TEST(CascadeParity, DetectionsAndMasksMatchDetectron2) {
  CascadeFixture f;
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
    std::cout << "[ detectron2 parity ] cascade image " << i << ": " << r.size()
              << " detections vs " << want_boxes.size(0) << ": " << m.summary()
              << "; mask pixels differing " << differing << " (" << 100 * fraction << "%)\n";
    EXPECT_EQ(r.size(), want_boxes.size(0)) << "image " << i;
    EXPECT_EQ(m.unexplained, 0) << "image " << i;
    EXPECT_LT(fraction, 1e-3);
  }
}

// Under libtorch's convolutions (CONV_ALGORITHM direct), Detectron2's kernels, and under the
// default auto, where the mask head's upsampling runs as matrix products
// (ops/patchwise_conv_transpose2d.h): gradients and losses within the fixture's 1e-4 either way
// (torch 2.11, auto: 6.6e-6 of the largest value at most, fpn_output2's weight).
TEST(CascadeParity, TrainingLossesAndGradientsMatchDetectron2) {
  CascadeFixture f;
  REQUIRE_FIXTURE(f);
  for (auto algorithm : {layers::ConvAlgorithm::kDirect, layers::ConvAlgorithm::kAuto}) {
    layers::set_conv_algorithm(algorithm);
    const std::string label = algorithm == layers::ConvAlgorithm::kAuto ? "cascade (auto)"
                                                                        : "cascade (direct)";
    auto model = f.model();
    model->train();
    auto batch = f.batch(true);
    for (int i = 0; i < 2; ++i) {  // the reconstructed ground truth is the one Detectron2 used
      const at::Tensor want = f.fx.outputs().at("train_gt_boxes_" + std::to_string(i));
      EXPECT_LT(testing::max_abs_diff(batch[i].instances->boxes("gt_boxes").tensor(), want), 1e-4);
    }
    testing::CapturedScalars scalars;
    const auto losses = model->losses(batch);
    testing::expect_scalars_match(scalars.values, f.meta["train_event_scalars"], label);
    EXPECT_EQ(losses.size(), 9u);
    testing::expect_losses_match(losses, f.meta["train_losses"], label).backward();
    EXPECT_EQ(testing::expect_gradients_match(*model, f.fx.outputs(), label), 8);
  }
}

}  // namespace
}  // namespace detkit::modeling
