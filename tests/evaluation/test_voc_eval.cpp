// voc_eval reproduces Detectron2's Pascal VOC numbers (../shared/fixtures/voc_eval/: every
// per-class AP at IoU 0.50..0.95 for both metrics, and PascalVOCDetectionEvaluator's AP, AP50,
// AP75), and its matching rules hold on hand-made cases.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/data/voc/pascal_voc.h"
#include "detkit/evaluation/voc_eval.h"
#include "detkit/utils/file_io.h"
#include "tests/support/error_of.h"

namespace detkit::evaluation {
namespace {

using detkit::testing::error_of;
using detkit::testing::expect_contains;

const std::string kVocFixtures = std::string(DETKIT_SHARED_DIR) + "/fixtures/voc_eval/";

// The detections of every class of a results folder (<class>.txt).
std::vector<std::vector<VocDetection>> read_voc_results(const std::string& dir,
                                                        const VocGroundTruth& gt) {
  std::vector<std::vector<VocDetection>> out;
  for (const auto& name : data::voc_class_names()) {
    const std::string file = dir + "/" + name + ".txt";
    out.push_back(parse_voc_detections(read_file(file), file, gt));
  }
  return out;
}

TEST(VocEvalFixtures, EveryNumberEqualsDetectron2s) {
  if (!std::filesystem::exists(kVocFixtures + "expected_s1.json"))
    GTEST_SKIP() << "shared fixtures absent: " << kVocFixtures;
  const auto expected = nlohmann::json::parse(std::ifstream(kVocFixtures + "expected_s1.json"));
  const VocGroundTruth gt = load_voc_ground_truth(kVocFixtures + "VOC2007", "test");
  ASSERT_EQ(gt.image_ids.size(), 80u);
  const auto& names = data::voc_class_names();
  ASSERT_EQ(expected["classes"].get<std::vector<std::string>>(), names);
  // npos per class, from the annotations' difficult flags.
  for (const auto& name : names)
    EXPECT_EQ(voc_eval(gt, name, {}, 0.5, true).npos, expected["npos"][name].get<int64_t>())
        << name;
  double largest = 0;
  int compared = 0;
  for (const auto& c : expected["cases"]) {
    const auto detections =
        read_voc_results(kVocFixtures + c["results_dir"].get<std::string>(), gt);
    size_t total = 0;
    for (size_t k = 0; k < names.size(); ++k) {
      EXPECT_EQ(detections[k].size(), c["n_detections_per_class"][names[k]].get<size_t>())
          << names[k];
      total += detections[k].size();
    }
    EXPECT_EQ(total, c["n_detections"].get<size_t>());
    for (const auto& [metric, use_07] :
         {std::pair{std::string("voc2007_11point"), true}, std::pair{std::string("area"), false}}) {
      const VocResult result = evaluate_voc(gt, names, detections, use_07);
      for (size_t k = 0; k < names.size(); ++k)
        for (int t = 0; t < 10; ++t) {
          const double want =
              c["per_class_ap"][metric][names[k]][std::to_string(50 + 5 * t)].get<double>();
          const double diff = std::abs(result.ap[k][t] - want);
          largest = std::max(largest, diff);
          ++compared;
          EXPECT_LE(diff, 1e-9) << c["results_dir"] << " " << metric << " " << names[k] << " "
                                << 50 + 5 * t;
        }
      const auto& d2 = c["detectron2_pascal_voc_evaluator"][metric]["bbox"];
      for (const auto& [key, value] : {std::pair{"AP", result.AP}, std::pair{"AP50", result.AP50},
                                       std::pair{"AP75", result.AP75}}) {
        const double diff = std::abs(value - d2[key].get<double>());
        largest = std::max(largest, diff);
        ++compared;
        EXPECT_LE(diff, 1e-9) << c["results_dir"] << " " << metric << " " << key;
      }
    }
  }
  EXPECT_EQ(compared, 2 * 2 * (20 * 10 + 3));
  std::printf("voc_eval vs Detectron2: %d numbers, largest difference %.3g\n", compared, largest);
}

VocGroundTruth voc_one_image(std::vector<VocGtObject> objects) {
  VocGroundTruth gt;
  gt.add_image("img", std::move(objects), "test");
  return gt;
}

TEST(VocAp, ElevenPointAndAreaOfAKnownCurve) {
  // Recall 0.5 at precision 1, then recall 1 at precision 0.5.
  EXPECT_DOUBLE_EQ(voc_ap({0.5, 1.0}, {1.0, 0.5}, true), (6 * 1.0 + 5 * 0.5) / 11);
  EXPECT_DOUBLE_EQ(voc_ap({0.5, 1.0}, {1.0, 0.5}, false), 0.5 * 1.0 + 0.5 * 0.5);
  // The envelope: a later higher precision lifts the earlier points.
  EXPECT_DOUBLE_EQ(voc_ap({0.0, 0.5, 1.0}, {0.0, 0.5, 1.0}, false), 1.0);
  EXPECT_EQ(voc_ap({}, {}, true), 0.0);
  EXPECT_EQ(voc_ap({}, {}, false), 0.0);
}

TEST(VocEval, MatchNeedsIouAboveTheThreshold) {
  // GT 1..10 (10 px wide with VOC's +1); the detection 1..10 x 1..5 covers half: IoU 0.5.
  const VocGroundTruth gt = voc_one_image({{"dog", false, {1, 1, 10, 10}}});
  const std::vector<VocDetection> det = {{0, 0.9, {1, 1, 10, 5}}};
  EXPECT_EQ(voc_eval(gt, "dog", det, 0.5, false).ap, 0.0);  // 0.5 is not > 0.5
  EXPECT_EQ(voc_eval(gt, "dog", det, 0.45, false).ap, 1.0);
  EXPECT_EQ(voc_eval(gt, "cat", det, 0.45, false).npos, 0);
}

TEST(VocEval, DuplicatesAreFalsePositivesAndDifficultObjectsAreIgnored) {
  const VocGroundTruth gt =
      voc_one_image({{"dog", false, {1, 1, 10, 10}}, {"dog", true, {101, 101, 110, 110}}});
  const std::vector<VocDetection> dets = {
      {0, 0.9, {1, 1, 10, 10}}, {0, 0.8, {1, 1, 10, 10}}, {0, 0.95, {101, 101, 110, 110}}};
  const VocCurve curve = voc_eval(gt, "dog", dets, 0.5, false);
  EXPECT_EQ(curve.npos, 1);
  // Score order: the difficult match (neither), the true positive, the duplicate.
  EXPECT_EQ(curve.recall, (std::vector<double>{0.0, 1.0, 1.0}));
  EXPECT_EQ(curve.precision, (std::vector<double>{0.0, 1.0, 0.5}));
  EXPECT_EQ(curve.ap, 1.0);
}

TEST(VocEval, NoObjectButDetectionsGivesNanUnderTheAreaMetric) {
  const VocGroundTruth gt = voc_one_image({{"dog", true, {1, 1, 10, 10}}});
  const std::vector<VocDetection> det = {{0, 0.9, {1, 1, 10, 10}}};
  EXPECT_TRUE(std::isnan(voc_eval(gt, "dog", det, 0.5, false).ap));
  EXPECT_EQ(voc_eval(gt, "dog", det, 0.5, true).ap, 0.0);
}

TEST(VocDetectionLine, FormatsAsDetectron2) {
  // Expected strings from Python: the float32 box with + 1 in float32, f"{v:.1f}", f"{s:.3f}".
  EXPECT_EQ(voc_detection_line("id", 0.0625f, {0.05f, 0.25f, 2.25f, 3.75f}),
            "id 0.062 1.0 1.2 2.2 3.8");
  EXPECT_EQ(voc_detection_line("id", 0.5005f, {-1.0f, -0.95f, 100.25f, 7.05f}),
            "id 0.501 0.0 0.1 100.2 7.1");
  EXPECT_EQ(voc_detection_line("id", 0.783f, {494.9f, 205.9f, 598.3f, 258.3f}),
            "id 0.783 495.9 206.9 598.3 258.3");
  EXPECT_EQ(voc_detection_line("id", 0.0004999f, {1e-7f, 0.04999f, 0.35f, 0.45f}),
            "id 0.000 1.0 1.0 0.3 0.4");
}

TEST(VocDetections, BadLinesNameTheFileAndLine) {
  const VocGroundTruth gt = voc_one_image({});
  EXPECT_EQ(parse_voc_detections("", "dog.txt", gt).size(), 0u);
  EXPECT_EQ(parse_voc_detections("img 0.5 1 2 3 4\nimg 0.25 1 2 3 4", "dog.txt", gt).size(), 2u);
  expect_contains(
      error_of([&] { parse_voc_detections("img 0.5 1 2 3 4\nother 0.5 1 2 3 4", "dog.txt", gt); }),
      "dog.txt:2: image 'other' is not in the ground truth's split");
  expect_contains(error_of([&] { parse_voc_detections("img 0.5 1 2 3", "dog.txt", gt); }),
                  "dog.txt:1: expected '<image id> <score>");
  expect_contains(error_of([&] { parse_voc_detections("img 0.5\n\n", "dog.txt", gt); }),
                  "dog.txt:1:");
  expect_contains(error_of([&] { parse_voc_detections("img nan 1 2 3 4", "dog.txt", gt); }),
                  "dog.txt:1: 'nan' is not a finite number");
  expect_contains(error_of([&] { parse_voc_detections("img 0.5 1 2 3x 4", "dog.txt", gt); }),
                  "'3x' is not a finite number");
}

}  // namespace
}  // namespace detkit::evaluation
