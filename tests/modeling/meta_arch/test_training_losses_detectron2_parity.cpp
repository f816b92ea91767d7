// Training parity with Detectron2: on the fixture's two training images (every anchor and
// proposal used, so nothing is random) the five losses and six recorded gradients match.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "tests/modeling/meta_arch/fixture_targets.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::modeling {

TEST(GeneralizedRCNNParity, TrainingLossesAndGradientsMatchDetectron2) {
  testing::Detectron2Fixture fx;
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  auto cfg = fx.config();
  auto model = build_model(cfg);
  auto report = checkpoint::load_state_dict(*model, fx.weights());
  ASSERT_TRUE(report.complete()) << report.summary();
  model->train();
  nlohmann::json meta = nlohmann::json::parse(std::ifstream(fx.dir + "outputs.json"));
  nlohmann::json coco = nlohmann::json::parse(std::ifstream(
      std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_val2017.json"));

  std::vector<ModelInput> batch(2);
  for (int i = 0; i < 2; ++i) {
    const auto& m = meta["images"][i];
    at::Tensor image = fx.outputs().at("train_input_tensor_" + std::to_string(i));
    batch[i].image = image;
    batch[i].instances = testing::fixture_targets(coco, m["image_id"], m["height"], m["width"],
                                                  image.size(1), image.size(2));
    // The reconstructed ground truth is the one Detectron2 trained on.
    at::Tensor want = fx.outputs().at("train_gt_boxes_" + std::to_string(i));
    const auto& got = batch[i].instances->boxes("gt_boxes").tensor();
    ASSERT_EQ(got.sizes(), want.sizes());
    EXPECT_LT((got - want).abs().max().item<double>(), 1e-4);
    EXPECT_TRUE(batch[i]
                    .instances->tensor("gt_classes")
                    .equal(fx.outputs().at("train_gt_classes_" + std::to_string(i))));
  }
  auto losses = model->losses(batch);
  at::Tensor total = at::zeros({});
  for (const auto& [name, want] : meta["train_losses"].items()) {
    ASSERT_TRUE(losses.count(name)) << name;
    double got = losses.at(name).item<double>();
    double rel = std::abs(got - want.get<double>()) / std::abs(want.get<double>());
    std::cout << "[ detectron2 parity ] " << name << " " << got << " vs " << want.get<double>()
              << " (relative diff " << rel << ")\n";
    EXPECT_LT(rel, 1e-4) << name;
    total = total + losses.at(name);
  }
  EXPECT_EQ(losses.size(), 5u);
  total.backward();
  auto params = model->named_parameters();
  for (const auto& [key, want] : fx.outputs()) {
    if (key.rfind("grad.", 0) != 0) continue;
    std::string name = key.substr(5);
    ASSERT_TRUE(params.contains(name)) << name;
    at::Tensor grad = params[name].grad();
    ASSERT_TRUE(grad.defined()) << name;
    double diff = (grad - want).abs().max().item<double>();
    double scale = want.abs().max().item<double>();
    std::cout << "[ detectron2 parity ] grad " << name << ": max abs diff " << diff
              << " (values up to " << scale << ")\n";
    EXPECT_LT(diff, 1e-4 * scale) << name;
  }
}

}  // namespace detkit::modeling
