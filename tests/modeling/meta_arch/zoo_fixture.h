#pragma once
// A Detectron2 model-zoo parity fixture of ../shared/fixtures/<name>/ (config.yaml, weights.pth,
// outputs.pth, outputs.json with two coco_tiny val images): the model with its weights and the
// two images as Detectron2's test mapper gave them, with their ground truth for training.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/modeling/meta_arch/meta_arch.h"
#include "tests/modeling/meta_arch/fixture_targets.h"
#include "tests/modeling/meta_arch/parity_checks.h"
#include "tests/support/detectron2_fixture.h"
#include "tests/support/scalar_parity.h"

namespace detkit::testing {

struct ZooFixture {
  Detectron2Fixture fx;
  nlohmann::json meta;
  explicit ZooFixture(const std::string& name) {
    fx.dir = std::string(DETKIT_SHARED_DIR) + "/fixtures/" + name + "/";
    if (fx.present()) meta = nlohmann::json::parse(std::ifstream(fx.dir + "outputs.json"));
  }
  /// The fixture's model (MODEL.META_ARCHITECTURE of its config) with its weights.
  template <typename Model = modeling::GeneralizedRCNN>
  std::shared_ptr<Model> model() {
    auto model = std::dynamic_pointer_cast<Model>(modeling::build_model(fx.config()));
    if (!model) throw std::runtime_error("the fixture's model is not of the type asked for");
    auto report = checkpoint::load_state_dict(*model, fx.weights());
    EXPECT_TRUE(report.complete()) << report.summary();
    return model;
  }
  std::vector<modeling::ModelInput> batch(bool with_targets) {
    const nlohmann::json coco = nlohmann::json::parse(std::ifstream(
        std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_val2017.json"));
    std::vector<modeling::ModelInput> batch(2);
    for (int i = 0; i < 2; ++i) {
      const auto& m = meta["images"][i];
      batch[i].image = fx.outputs().at("input_tensor_" + std::to_string(i));  // uint8, as mapped
      batch[i].height = m["height"];
      batch[i].width = m["width"];
      if (with_targets)
        batch[i].instances = fixture_targets(coco, m["image_id"], m["height"], m["width"],
                                             batch[i].image.size(1), batch[i].image.size(2));
    }
    return batch;
  }
  /// One training forward and backward on the two images: the ground truth is the one Detectron2
  /// used, and its event scalars, its `num_losses` losses and its `num_gradients` recorded
  /// gradients are matched (parity_checks.h's tolerances).
  template <typename Model = modeling::GeneralizedRCNN>
  void expect_training_matches(const std::string& label, size_t num_losses, int num_gradients) {
    auto net = model<Model>();
    net->train();
    auto inputs = batch(true);
    for (int i = 0; i < 2; ++i) {
      const at::Tensor want = fx.outputs().at("train_gt_boxes_" + std::to_string(i));
      EXPECT_LT(max_abs_diff(inputs[i].instances->boxes("gt_boxes").tensor(), want), 1e-4);
    }
    CapturedScalars scalars;
    const auto losses = net->losses(inputs);
    expect_scalars_match(scalars.values, meta["train_event_scalars"], label);
    EXPECT_EQ(losses.size(), num_losses);
    expect_losses_match(losses, meta["train_losses"], label).backward();
    EXPECT_EQ(expect_gradients_match(*net, fx.outputs(), label), num_gradients);
  }
};

#define REQUIRE_FIXTURE(f) \
  if (!(f).fx.present()) GTEST_SKIP() << "fixture absent: " << (f).fx.dir

}  // namespace detkit::testing
