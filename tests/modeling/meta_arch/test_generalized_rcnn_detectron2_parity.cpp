// Mask R-CNN end to end against Detectron2 itself: same weights and images give the same
// detections (boxes, scores, classes) and pasted masks.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/structures/mask_ops.h"
#include "tests/support/detectron2_fixture.h"

namespace detkit::modeling {

TEST(GeneralizedRCNNParity, InferenceMatchesDetectron2) {
  testing::Detectron2Fixture fx;
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  auto cfg = fx.config();
  auto model = build_model(cfg);
  model->eval();
  auto report = checkpoint::load_state_dict(*model, fx.weights());
  EXPECT_TRUE(report.complete()) << report.summary();
  nlohmann::json meta = nlohmann::json::parse(std::ifstream(fx.dir + "outputs.json"));

  std::vector<ModelInput> batch(2);
  for (int i = 0; i < 2; ++i) {
    batch[i].image = fx.outputs().at("input_tensor_" + std::to_string(i));
    batch[i].height = meta["images"][i]["height"];
    batch[i].width = meta["images"][i]["width"];
  }
  at::NoGradGuard no_grad;
  auto results = model->inference(batch);
  ASSERT_EQ(results.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const auto& r = results[i];
    std::string s = std::to_string(i);
    at::Tensor want_boxes = fx.outputs().at("pred_boxes_" + s);
    ASSERT_EQ(r.size(), want_boxes.size(0)) << "image " << i;
    double box_diff = (r.boxes("pred_boxes").tensor() - want_boxes).abs().max().item<double>();
    double score_diff = (r.tensor("scores") - fx.outputs().at("scores_" + s)).abs().max().item<double>();
    bool same_classes = r.tensor("pred_classes").equal(fx.outputs().at("pred_classes_" + s));
    // Masks: fraction of differing pixels over all detections of the image.
    at::Tensor masks = r.tensor("pred_masks");
    int64_t differing = 0;
    const auto& rles = meta["images"][i]["pred_mask_rles"];
    ASSERT_EQ(static_cast<int64_t>(rles.size()), masks.size(0));
    for (int64_t k = 0; k < masks.size(0); ++k) {
      auto want = mask_ops::decode(mask_ops::from_string(rles[k], batch[i].height, batch[i].width));
      at::Tensor want_mask = at::from_blob(want.data(), {batch[i].height, batch[i].width}, at::kByte)
                                 .to(at::kBool);
      differing += (masks[k] != want_mask).sum().item<int64_t>();
    }
    double mask_fraction = double(differing) / double(masks.numel());
    std::cout << "[ detectron2 parity ] image " << i << ": " << r.size() << " detections, max abs diff"
              << " boxes " << box_diff << " px, scores " << score_diff << ", classes "
              << (same_classes ? "identical" : "DIFFER") << ", mask pixels differing "
              << differing << " (" << 100 * mask_fraction << "%)\n";
    EXPECT_LT(box_diff, 1e-3);
    EXPECT_LT(score_diff, 1e-4);
    EXPECT_TRUE(same_classes);
    EXPECT_LT(mask_fraction, 1e-3);
  }
}

}  // namespace detkit::modeling
