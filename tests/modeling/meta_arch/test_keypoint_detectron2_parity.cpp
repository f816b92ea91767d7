// Keypoint R-CNN against Detectron2 itself (../shared/fixtures/detectron2_keypoint): the
// fixture's weights and images give its detections, keypoints and heatmaps; heatmaps_to_keypoints
// of its own heatmaps gives its keypoints; and on its synthetic person keypoints the five
// training losses and the recorded gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/modeling/roi_heads/keypoint_head.h"
#include "tests/modeling/meta_arch/parity_checks.h"
#include "tests/support/scalar_parity.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::modeling {
namespace {

using structures::Instances;

struct KeypointFixture {
  testing::Detectron2Fixture fx;
  nlohmann::json meta;
  KeypointFixture() {
    fx.dir = std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_keypoint/";
    if (fx.present()) meta = nlohmann::json::parse(std::ifstream(fx.dir + "outputs.json"));
  }
  std::shared_ptr<GeneralizedRCNN> model() {
    auto model = build_generalized_rcnn(fx.config());
    auto report = checkpoint::load_state_dict(*model, fx.weights());
    EXPECT_TRUE(report.complete()) << report.summary();
    return model;
  }
  // The mapped images; with targets, the fixture's mapped training targets.
  std::vector<ModelInput> batch(bool with_targets) {
    std::vector<ModelInput> batch(2);
    for (int i = 0; i < 2; ++i) {
      const std::string s = std::to_string(i);
      const auto& m = meta["images"][i];
      batch[i].image = fx.outputs().at("input_tensor_" + s);
      batch[i].height = m["height"];
      batch[i].width = m["width"];
      if (!with_targets) continue;
      Instances targets(batch[i].image.size(1), batch[i].image.size(2));
      targets.set("gt_boxes", structures::Boxes(fx.outputs().at("train_gt_boxes_" + s)));
      targets.set("gt_classes", fx.outputs().at("train_gt_classes_" + s));
      targets.set("gt_keypoints", fx.outputs().at("train_gt_keypoints_" + s));
      batch[i].instances = targets;
    }
    return batch;
  }
};

#define REQUIRE_FIXTURE(f) \
  if (!(f).fx.present()) GTEST_SKIP() << "fixture absent: " << (f).fx.dir

// Keypoints (R, K, 3) of matched detections: the largest x/y difference, the largest score
// difference, and how many keypoints moved by more than `tol` px (a heatmap argmax that a near
// tie moved to the next cell).
struct KeypointDiff {
  double xy = 0, score = 0;
  int64_t jumps = 0;
};
KeypointDiff compare_keypoints(const at::Tensor& ours, const at::Tensor& want,
                               const std::vector<int64_t>& partner, double tol) {
  KeypointDiff d;
  for (size_t k = 0; k < partner.size(); ++k) {
    if (partner[k] < 0) continue;
    const at::Tensor a = ours[partner[k]].to(at::kDouble), b = want[k].to(at::kDouble);
    const at::Tensor xy = (a.narrow(1, 0, 2) - b.narrow(1, 0, 2)).abs().amax(1);
    d.jumps += (xy > tol).sum().item<int64_t>();
    d.xy = std::max(d.xy, (xy * (xy <= tol)).max().item<double>());
    d.score = std::max(d.score, (a.select(1, 2) - b.select(1, 2)).abs().max().item<double>());
  }
  return d;
}

TEST(KeypointParity, HeatmapsToKeypointsOfDetectron2sHeatmaps) {
  KeypointFixture f;
  REQUIRE_FIXTURE(f);
  for (int i = 0; i < 2; ++i) {
    const std::string s = std::to_string(i);
    const at::Tensor maps = f.fx.outputs().at("keypoint_heatmaps_" + s);
    const at::Tensor boxes = f.fx.outputs().at("pred_boxes_input_" + s).narrow(0, 0, maps.size(0));
    const at::Tensor want =
        f.fx.outputs().at("keypoints_xy_logit_score_input_" + s).narrow(0, 0, maps.size(0));
    const at::Tensor got = heatmaps_to_keypoints(maps, boxes);
    const double diff = testing::max_abs_diff(got, want);
    std::cout << "[ detectron2 parity ] heatmaps_to_keypoints image " << i << ": " << maps.size(0)
              << " x " << maps.size(1) << " keypoints, max abs diff " << diff << "\n";
    EXPECT_LT(diff, 1e-5);
  }
}

TEST(KeypointParity, DetectionsKeypointsAndHeatmapsMatchDetectron2) {
  KeypointFixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model();
  model->eval();
  at::NoGradGuard no_grad;
  const auto results = model->inference(f.batch(false));
  ASSERT_EQ(results.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const std::string s = std::to_string(i);
    const Instances& r = results[i];
    const auto m = testing::match_fixture_detections(r, f.fx.outputs(), i);
    EXPECT_EQ(r.size(), f.fx.outputs().at("pred_boxes_" + s).size(0));
    EXPECT_EQ(m.unexplained, 0) << "image " << i;
    const KeypointDiff k = compare_keypoints(
        r.tensor("pred_keypoints"), f.fx.outputs().at("pred_keypoints_" + s), m.partner, 1e-3);
    // The top detections' heatmap logits.
    const at::Tensor want_maps = f.fx.outputs().at("keypoint_heatmaps_" + s);
    double dh = 0;
    for (int64_t j = 0; j < want_maps.size(0); ++j) {
      ASSERT_GE(m.partner[j], 0) << "top detection " << j << " of image " << i << " unmatched";
      dh = std::max(dh, testing::max_abs_diff(r.tensor("pred_keypoint_heatmaps")[m.partner[j]],
                                              want_maps[j]));
    }
    std::cout << "[ detectron2 parity ] keypoint image " << i << ": " << m.summary()
              << "; keypoints max abs diff x/y " << k.xy << " px, score " << k.score << " ("
              << k.jumps << " moved by a near-tied heatmap cell); heatmaps " << dh << "\n";
    EXPECT_LT(k.xy, 1e-3);
    EXPECT_LT(k.score, 1e-4);
    EXPECT_EQ(k.jumps, 0);
    EXPECT_LT(dh, 1e-3);
  }
}

TEST(KeypointParity, TrainingLossesAndGradientsMatchDetectron2) {
  KeypointFixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model();
  model->train();
  testing::CapturedScalars scalars;
  const auto losses = model->losses(f.batch(true));
  testing::expect_scalars_match(scalars.values, f.meta["train_event_scalars"], "keypoint");
  EXPECT_EQ(losses.size(), 5u);
  testing::expect_losses_match(losses, f.meta["train_losses"], "keypoint").backward();
  EXPECT_EQ(testing::expect_gradients_match(*model, f.fx.outputs(), "keypoint"), 7);
}

// Detectron2 lets CascadeROIHeads carry the keypoint head (on stage 0's sampled foreground in
// training, on the final boxes at inference). No fixture has one: on the fixture's inputs a
// cascade Keypoint R-CNN (random weights) trains a step with every parameter getting a finite
// gradient, and infers keypoints for its detections.
TEST(CascadeKeypoints, TrainAStepAndInferKeypointsOnTheFinalBoxes) {
  KeypointFixture f;
  REQUIRE_FIXTURE(f);
  config::CfgNode cfg = f.fx.config();
  cfg.merge_from_list({"MODEL.ROI_HEADS.NAME", "CascadeROIHeads",
                       "MODEL.ROI_BOX_HEAD.CLS_AGNOSTIC_BBOX_REG", "True"});
  at::manual_seed(0);
  auto model = build_generalized_rcnn(cfg);
  EXPECT_TRUE(model->named_parameters().contains(
      "roi_heads.keypoint_head.score_lowres.weight"));
  EXPECT_TRUE(model->named_parameters().contains("roi_heads.box_predictor.2.bbox_pred.weight"));
  model->train();
  const auto losses = model->losses(f.batch(true));
  ASSERT_TRUE(losses.count("loss_keypoint"));
  for (const char* name : {"loss_cls_stage0", "loss_box_reg_stage2", "loss_rpn_cls"})
    EXPECT_TRUE(losses.count(name)) << name;
  at::Tensor total = at::zeros({});
  for (const auto& [name, loss] : losses) {
    EXPECT_TRUE(std::isfinite(loss.item<double>())) << name;
    total = total + loss;
  }
  std::cout << "[ cascade keypoints ] loss_keypoint " << losses.at("loss_keypoint").item<double>()
            << ", " << losses.size() << " losses\n";
  EXPECT_GT(losses.at("loss_keypoint").item<double>(), 0.0);
  total.backward();
  for (const auto& p : model->named_parameters())
    if (p.value().requires_grad())
      EXPECT_TRUE(p.value().grad().defined() && p.value().grad().isfinite().all().item<bool>())
          << p.key();
  model->eval();
  at::NoGradGuard no_grad;
  const auto results = model->inference(f.batch(false));
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    ASSERT_GT(r.size(), 0);
    EXPECT_EQ(r.tensor("pred_keypoints").sizes().vec(), (std::vector<int64_t>{r.size(), 17, 3}));
  }
}

}  // namespace
}  // namespace detkit::modeling
