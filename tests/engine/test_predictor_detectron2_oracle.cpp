// DefaultPredictor (C++) on the JPEGs of every Detectron2 fixture, each image alone, as a user
// calls it, against Detectron2's DefaultPredictor on the same JPEG with the same weights
// (tests/oracles/detectron2_predictor/<fixture>.json): the mapped input against the fixture's
// input_tensor_i, detections as matched sets, keypoints, masks by the pixels they differ on. The
// fixtures' own pred_boxes_i come from one batch of both images, padded to the larger one's size:
// right for an image of that size, not for a smaller one alone (see the oracle's README).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/config/defaults.h"
#include "detkit/data/image/image_io.h"
#include "detkit/engine/predictor.h"
#include "detkit/structures/mask_ops.h"
#include "tests/support/matched_sets.h"

namespace detkit::engine {
namespace {

namespace fs = std::filesystem;

at::Tensor tensor_of(const nlohmann::json& values, at::ScalarType type) {
  std::vector<double> flat;
  std::vector<int64_t> shape;
  // Row-major flattening of a nested array of numbers, with its shape.
  std::function<void(const nlohmann::json&, size_t)> walk = [&](const nlohmann::json& v,
                                                                size_t depth) {
    if (!v.is_array()) {
      flat.push_back(v.get<double>());
      return;
    }
    if (shape.size() == depth) shape.push_back(static_cast<int64_t>(v.size()));
    for (const auto& e : v) walk(e, depth + 1);
  };
  walk(values, 0);
  return at::tensor(flat, at::kDouble).reshape(shape).to(type);
}

// Over matched pairs: the largest share of the image's pixels on which a mask of ours and its
// partner's differ (the fixtures' READMEs: equal to 0.1 %), and the lowest IoU.
std::pair<double, double> mask_differences(const at::Tensor& ours, const nlohmann::json& reference,
                                           const std::vector<int64_t>& partner) {
  const at::Tensor masks = ours.to(at::kByte).contiguous();
  double off = 0, lowest_iou = 1.0;
  for (size_t r = 0; r < partner.size(); ++r) {
    if (partner[r] < 0) continue;
    const auto& rle = reference[r];
    const int64_t h = rle["size"][0], w = rle["size"][1];
    const std::vector<uint8_t> want = mask_ops::decode(mask_ops::from_string(rle["counts"], h, w));
    const at::Tensor got = masks[partner[r]];
    EXPECT_EQ(got.size(0) * got.size(1), h * w);
    const at::Tensor want_t = at::from_blob(const_cast<uint8_t*>(want.data()), {h, w}, at::kByte);
    const double differing = got.ne(want_t).sum().item<double>();
    const double united = (got.ne(0) | want_t.ne(0)).sum().item<double>();
    off = std::max(off, differing / static_cast<double>(h * w));
    if (united > 0) lowest_iou = std::min(lowest_iou, 1.0 - differing / united);
  }
  return {off, lowest_iou};
}

class PredictorVsDetectron2 : public ::testing::TestWithParam<std::string> {};

TEST_P(PredictorVsDetectron2, EveryFixtureJpegAloneGivesDetectron2sPredictorOutput) {
  const std::string fixture = GetParam();
  const std::string dir = std::string(DETKIT_SHARED_DIR) + "/fixtures/" + fixture + "/";
  const std::string oracle_file =
      std::string(DETKIT_SOURCE_DIR) + "/tests/oracles/detectron2_predictor/" + fixture + ".json";
  if (!fs::exists(dir + "weights.pth")) GTEST_SKIP() << "fixture absent: " << dir;
  const nlohmann::json oracle = nlohmann::json::parse(std::ifstream(oracle_file));
  const checkpoint::TensorDict inputs = checkpoint::load_plain_tensor_dict(dir + "outputs.pth");
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(dir + "config.yaml");
  cfg.merge_from_list({"MODEL.WEIGHTS", dir + "weights.pth"});
  DefaultPredictor predictor(cfg);

  for (size_t i = 0; i < oracle["images"].size(); ++i) {
    const nlohmann::json& want = oracle["images"][i];
    const std::string image =
        std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/" + want["file_name"].get<std::string>();
    const cv::Mat bgr = data::read_image(image, "BGR");
    const at::Tensor mapped = predictor.preprocess(bgr).image;
    const at::Tensor d2_mapped = inputs.at("input_tensor_" + std::to_string(i));
    ASSERT_EQ(mapped.sizes(), d2_mapped.sizes()) << image;
    const double input_diff = (mapped - d2_mapped).abs().max().item<double>();

    const structures::Instances found = predictor(bgr);
    const at::Tensor ref_scores = tensor_of(want["scores"], at::kFloat);
    const auto m = testing::match_sets(
        {found.boxes("pred_boxes").tensor(), found.tensor("scores"), found.tensor("pred_classes")},
        {tensor_of(want["pred_boxes"], at::kFloat), ref_scores,
         tensor_of(want["pred_classes"], at::kLong)},
        /*box_tol=*/1e-3, /*score_tol=*/1e-4);
    std::cout << "[ predictor " << fixture << " ] " << fs::path(image).filename().string()
              << ": input max abs diff " << input_diff << "; " << found.size() << " detections vs "
              << ref_scores.size(0) << ": " << m.summary();
    EXPECT_EQ(input_diff, 0.0) << image;
    EXPECT_EQ(found.size(), ref_scores.size(0)) << image;
    EXPECT_EQ(m.unexplained, 0) << image;

    if (want.contains("pred_keypoints")) {
      ASSERT_TRUE(found.has("pred_keypoints")) << image;
      const at::Tensor ours = found.tensor("pred_keypoints");
      const at::Tensor ref = tensor_of(want["pred_keypoints"], at::kFloat);
      double xy = 0, score = 0;
      for (size_t r = 0; r < m.partner.size(); ++r) {
        if (m.partner[r] < 0) continue;
        const at::Tensor d = (ours[m.partner[r]] - ref[r]).abs();
        xy = std::max(xy, d.slice(1, 0, 2).max().item<double>());
        score = std::max(score, d.select(1, 2).max().item<double>());
      }
      std::cout << "; keypoints max diff x/y " << xy << " px, scores " << score;
      EXPECT_LE(xy, 1e-3) << image;
      EXPECT_LE(score, 1e-4) << image;
    }
    if (want.contains("pred_masks")) {
      ASSERT_TRUE(found.has("pred_masks")) << image;
      const auto [off, iou] =
          mask_differences(found.tensor("pred_masks"), want["pred_masks"], m.partner);
      std::cout << "; masks differ on " << 100 * off << " % of the image at most (IoU min " << iou
                << ")";
      EXPECT_LE(off, 1e-3) << image;
    }
    std::cout << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PredictorVsDetectron2,
                         ::testing::Values("detectron2", "detectron2_keypoint",
                                           "detectron2_retinanet", "detectron2_cascade"));

}  // namespace
}  // namespace detkit::engine
