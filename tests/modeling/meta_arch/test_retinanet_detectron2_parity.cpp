// RetinaNet against Detectron2 itself (../shared/fixtures/detectron2_retinanet): the fixture's
// weights and images give its P3-P7 features, anchors, head outputs, detections, the two
// training losses (with Detectron2's foreground moving average) and the recorded gradients.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/modeling/meta_arch/retinanet.h"
#include "tests/modeling/meta_arch/parity_checks.h"
#include "tests/support/scalar_parity.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::modeling {
namespace {

using structures::Boxes;
using structures::Instances;

struct RetinaNetFixture {
  testing::Detectron2Fixture fx;
  RetinaNetFixture() {
    fx.dir = std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2_retinanet/";
  }
  bool present() const { return fx.present(); }
  nlohmann::json meta() const {
    return nlohmann::json::parse(std::ifstream(fx.dir + "outputs.json"));
  }
  std::shared_ptr<RetinaNet> model() {
    auto model = build_retinanet(fx.config());
    auto report = checkpoint::load_state_dict(*model, fx.weights());
    EXPECT_TRUE(report.complete()) << report.summary();
    return model;
  }
  std::vector<structures::ModelInput> batch(bool with_targets) {
    const nlohmann::json m = meta();
    std::vector<structures::ModelInput> batch(2);
    for (int i = 0; i < 2; ++i) {
      const std::string s = std::to_string(i);
      batch[i].image = fx.outputs().at("input_tensor_" + s);
      batch[i].height = m["images"][i]["height"];
      batch[i].width = m["images"][i]["width"];
      if (!with_targets) continue;
      Instances targets(batch[i].image.size(1), batch[i].image.size(2));
      targets.set("gt_boxes", Boxes(fx.outputs().at("train_gt_boxes_" + s)));
      targets.set("gt_classes", fx.outputs().at("train_gt_classes_" + s));
      batch[i].instances = targets;
    }
    return batch;
  }
};

#define REQUIRE_FIXTURE(f) \
  if (!(f).fx.present()) GTEST_SKIP() << "fixture absent: " << (f).fx.dir

TEST(RetinaNetParity, FeaturesAnchorsAndHeadOutputsMatchDetectron2) {
  RetinaNetFixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model();
  model->eval();
  at::NoGradGuard no_grad;
  const structures::ImageList images = model->preprocess_image(f.batch(false));
  const at::Tensor padded = f.fx.outputs().at("padded_batch_shape");
  EXPECT_EQ(images.tensor().sizes().vec(),
            std::vector<int64_t>(padded.data_ptr<int64_t>(), padded.data_ptr<int64_t>() + 4));
  const auto all = model->backbone()->forward(images.tensor());
  const std::vector<at::Tensor> features = model->head_features(all);
  const std::vector<std::string> levels = {"p3", "p4", "p5", "p6", "p7"};
  for (size_t l = 0; l < levels.size(); ++l) {
    const double diff =
        testing::max_abs_diff(features[l], f.fx.outputs().at("features_" + levels[l]));
    std::cout << "[ detectron2 parity ] retinanet " << levels[l] << " " << features[l].sizes()
              << " max abs diff " << diff << "\n";
    EXPECT_LT(diff, 1e-4) << levels[l];
  }
  const std::vector<Boxes> anchors = model->anchor_generator()->forward(features);
  const at::Tensor counts = f.fx.outputs().at("anchors_count");
  auto* generator = dynamic_cast<DefaultAnchorGeneratorImpl*>(model->anchor_generator().get());
  ASSERT_NE(generator, nullptr);
  for (size_t l = 0; l < levels.size(); ++l) {
    EXPECT_EQ(anchors[l].size(), counts[l].item<int64_t>()) << levels[l];
    const double diff = testing::max_abs_diff(generator->cell_anchors()[l],
                                              f.fx.outputs().at("cell_anchors_" + levels[l]));
    EXPECT_LT(diff, 1e-5) << levels[l];
  }
  const double anchor_diff =
      testing::max_abs_diff(anchors[4].tensor(), f.fx.outputs().at("anchors_p7"));
  std::cout << "[ detectron2 parity ] retinanet anchors p7 max abs diff " << anchor_diff << "\n";
  EXPECT_LT(anchor_diff, 1e-4);
  // Raw head outputs (N, A * K, H, W) and (N, A * 4, H, W) on P5 and P7.
  const std::vector<at::Tensor> maps = {features[2], features[4]};
  // The transposed predictions undo to the raw layout: compare through predict().
  const DensePredictions predictions = model->predict(maps);
  for (size_t j = 0; j < 2; ++j) {
    const std::string level = j == 0 ? "p5" : "p7";
    at::Tensor want_logits = f.fx.outputs().at("head_cls_logits_" + level);
    at::Tensor want_deltas = f.fx.outputs().at("head_box_deltas_" + level);
    auto transpose = [](const at::Tensor& x, int64_t c) {
      return x.view({x.size(0), -1, c, x.size(2), x.size(3)})
          .permute({0, 3, 4, 1, 2})
          .reshape({x.size(0), -1, c});
    };
    const double logit_diff =
        testing::max_abs_diff(predictions.logits[j], transpose(want_logits, 80));
    const double delta_diff =
        testing::max_abs_diff(predictions.deltas[j], transpose(want_deltas, 4));
    std::cout << "[ detectron2 parity ] retinanet head " << level << ": logits max abs diff "
              << logit_diff << ", deltas " << delta_diff << "\n";
    EXPECT_LT(logit_diff, 1e-4);
    EXPECT_LT(delta_diff, 1e-4);
  }
}

TEST(RetinaNetParity, DetectionsMatchDetectron2) {
  RetinaNetFixture f;
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
    std::cout << "[ detectron2 parity ] retinanet image " << i << ": " << r.size()
              << " detections vs " << want_boxes.size(0) << ": " << m.summary() << "\n";
    EXPECT_EQ(r.size(), want_boxes.size(0)) << "image " << i;
    EXPECT_EQ(m.unexplained, 0) << "image " << i;
    EXPECT_TRUE(m.unmatched_reference.empty()) << "image " << i;
  }
}

TEST(RetinaNetParity, TrainingLossesAndGradientsMatchDetectron2) {
  RetinaNetFixture f;
  REQUIRE_FIXTURE(f);
  auto model = f.model();
  model->train();
  const nlohmann::json meta = f.meta();
  EXPECT_EQ(model->loss_normalizer(), 100.0);
  testing::CapturedScalars scalars;
  const auto losses = model->losses(f.batch(true));
  testing::expect_scalars_match(scalars.values, meta["train_event_scalars"], "retinanet");
  EXPECT_DOUBLE_EQ(model->loss_normalizer(), meta["loss_normalizer"].get<double>());
  ASSERT_EQ(losses.size(), 2u);
  testing::expect_losses_match(losses, meta["train_losses"], "retinanet").backward();
  EXPECT_EQ(testing::expect_gradients_match(*model, f.fx.outputs(), "retinanet"), 8);
  for (const auto& p : model->parameters())
    if (p.requires_grad()) EXPECT_TRUE(p.grad().defined());  // every parameter, every step
}

}  // namespace
}  // namespace detkit::modeling
