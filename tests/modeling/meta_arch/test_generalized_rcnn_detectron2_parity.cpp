// Mask R-CNN end to end against Detectron2 itself: same weights and images give the same
// detections (boxes, scores, classes) and pasted masks.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/modeling/meta_arch/generalized_rcnn.h"
#include "detkit/structures/mask_ops.h"
#include "tests/modeling/meta_arch/parity_checks.h"
#include "tests/support/detectron2_fixture.h"
#include "tests/support/matched_sets.h"

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

  const std::vector<ModelInput> batch = fx.inference_batch();
  at::NoGradGuard no_grad;
  auto results = model->inference(batch);
  ASSERT_EQ(results.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    const auto& r = results[i];
    std::string s = std::to_string(i);
    at::Tensor want_boxes = fx.outputs().at("pred_boxes_" + s);
    // Matched as sets (same class, box and score within tolerance): near-tied scores may swap
    // ranks between CPUs.
    const auto m = testing::match_sets(
        {r.boxes("pred_boxes").tensor(), r.tensor("scores"), r.tensor("pred_classes")},
        {want_boxes, fx.outputs().at("scores_" + s), fx.outputs().at("pred_classes_" + s)},
        /*box_tol=*/1e-3, /*score_tol=*/1e-4);
    EXPECT_EQ(r.size(), want_boxes.size(0)) << "image " << i;
    // Masks of matched pairs: fraction of differing pixels over all detections of the image.
    at::Tensor masks = r.tensor("pred_masks");
    const auto& rles = meta["images"][i]["pred_mask_rles"];
    ASSERT_EQ(static_cast<int64_t>(rles.size()), want_boxes.size(0));
    const int64_t differing =
        testing::mask_pixels_differing(masks, rles, m.partner, batch[i].height, batch[i].width);
    double mask_fraction = double(differing) / double(std::max<int64_t>(masks.numel(), 1));
    std::cout << "[ detectron2 parity ] image " << i << ": " << r.size() << " detections vs "
              << want_boxes.size(0) << ": " << m.summary() << "; mask pixels differing "
              << differing << " (" << 100 * mask_fraction << "%)\n";
    EXPECT_EQ(m.unexplained, 0) << "image " << i;
    EXPECT_LE(m.unmatched_reference.size(), static_cast<size_t>(want_boxes.size(0) / 50));
    EXPECT_LT(mask_fraction, 1e-3);
  }
}

}  // namespace detkit::modeling
