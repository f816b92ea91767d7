// DefaultPredictor under SOLVER.AMP; bad images and missing weights are named. Its detections
// against Detectron2's DefaultPredictor: test_predictor_detectron2_oracle.cpp.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include "detkit/engine/predictor.h"
#include "detkit/utils/error.h"
#include "tests/support/detectron2_fixture.h"
#include "tests/support/matched_sets.h"

namespace detkit::engine {
namespace {

TEST(DefaultPredictor, RunsUnderAutocastWithSolverAmpAndReturnsFp32) {
  testing::Detectron2Fixture fx;
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  config::CfgNode cfg = fx.config();
  cfg.merge_from_list({"MODEL.WEIGHTS", fx.dir + "weights.pth"});
  const std::string image =
      std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/val2017/000000532481.jpg";
  const structures::Instances fp32 = DefaultPredictor(cfg)(image);
  cfg.merge_from_list({"SOLVER.AMP.ENABLED", "True"});
  const structures::Instances bf16 = DefaultPredictor(cfg)(image);
  EXPECT_EQ(bf16.boxes("pred_boxes").tensor().scalar_type(), at::kFloat);
  EXPECT_EQ(bf16.tensor("scores").scalar_type(), at::kFloat);
  // The same model in bfloat16: a different result (autocast ran), close to fp32's (a random-
  // weights fixture: matched as sets within the tolerances of AutocastInference).
  EXPECT_FALSE(bf16.tensor("scores").equal(fp32.tensor("scores")));
  const auto m = testing::match_sets(
      {bf16.boxes("pred_boxes").tensor(), bf16.tensor("scores"), bf16.tensor("pred_classes")},
      {fp32.boxes("pred_boxes").tensor(), fp32.tensor("scores"), fp32.tensor("pred_classes")},
      /*box_tol=*/8.0, /*score_tol=*/0.02);
  std::cout << "[ predictor bf16 vs fp32 ] " << m.summary() << "\n";
  EXPECT_GE(static_cast<double>(m.partner.size() - m.unmatched_reference.size()),
            0.7 * static_cast<double>(m.partner.size()));
}

TEST(DefaultPredictor, RefusesBadImagesAndMissingWeights) {
  testing::Detectron2Fixture fx;
  if (!fx.present()) GTEST_SKIP() << "fixture absent: " << fx.dir;
  config::CfgNode cfg = fx.config();
  cfg.merge_from_list({"MODEL.WEIGHTS", ""});
  EXPECT_THROW(DefaultPredictor{cfg}, Error);
  cfg.merge_from_list({"MODEL.WEIGHTS", fx.dir + "weights.pth"});
  DefaultPredictor predictor(cfg);
  for (const cv::Mat& bad : {cv::Mat(), cv::Mat(8, 8, CV_8UC1), cv::Mat(8, 8, CV_32FC3)}) {
    try {
      predictor(bad);
      ADD_FAILURE() << "accepted a bad image";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("8-bit with 3 channels"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace detkit::engine
