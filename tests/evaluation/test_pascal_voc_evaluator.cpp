// PascalVOCDetectionEvaluator fed model outputs: the fixture's detections turned back into
// float32 boxes (the inverse of the lines Detectron2 wrote) must give back the same lines and
// Detectron2's AP, AP50, AP75 for year 2007 (11-point) and 2012 (area), in one process and
// gathered from two ranks.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "detkit/data/voc/pascal_voc.h"
#include "detkit/evaluation/pascal_voc_evaluator.h"
#include "detkit/utils/file_io.h"
#include "tests/support/error_of.h"
#include "tests/support/played_rank.h"

namespace detkit::evaluation {
namespace {

using detkit::testing::AsRank;
using detkit::testing::PlayedRank;

const std::string kVocEvaluatorFixtures = std::string(DETKIT_SHARED_DIR) + "/fixtures/voc_eval/";

struct VocFixtureDetections {
  std::vector<std::string> stems;                          // the split, in order
  std::map<std::string, structures::Instances> per_image;  // model outputs by stem
  std::vector<std::vector<std::string>> lines;             // the files' lines per class
};

// The results folder as model outputs: box [xmin - 1, ymin - 1, xmax, ymax] in float32.
VocFixtureDetections read_voc_fixture(const std::string& results_dir) {
  VocFixtureDetections f;
  f.stems = data::read_voc_image_set(kVocEvaluatorFixtures + "VOC2007/ImageSets/Main/test.txt");
  std::map<std::string, std::vector<float>> boxes, scores;
  std::map<std::string, std::vector<int64_t>> classes;
  const auto& names = data::voc_class_names();
  for (size_t c = 0; c < names.size(); ++c) {
    std::istringstream in(read_file(results_dir + "/" + names[c] + ".txt"));
    f.lines.emplace_back();
    for (std::string line; std::getline(in, line);) {
      f.lines.back().push_back(line);
      std::istringstream words(line);
      std::string stem;
      double score, x0, y0, x1, y1;
      words >> stem >> score >> x0 >> y0 >> x1 >> y1;
      for (double v : {x0 - 1, y0 - 1, x1, y1}) boxes[stem].push_back(static_cast<float>(v));
      scores[stem].push_back(static_cast<float>(score));
      classes[stem].push_back(static_cast<int64_t>(c));
    }
  }
  for (const auto& stem : f.stems) {
    structures::Instances out(480, 640);
    const auto n = static_cast<int64_t>(scores[stem].size());
    out.set("pred_boxes", structures::Boxes(at::tensor(boxes[stem]).reshape({n, 4})));
    out.set("scores", at::tensor(scores[stem]));
    out.set("pred_classes", at::tensor(classes[stem]));
    f.per_image.emplace(stem, std::move(out));
  }
  return f;
}

PascalVOCEvaluatorOptions voc_options_for(int year, const std::vector<std::string>& stems) {
  PascalVOCEvaluatorOptions o;
  o.dataset_name = "voc_fixture";
  o.dirname = kVocEvaluatorFixtures + "VOC2007";
  o.split = "test";
  o.year = year;
  o.class_names = data::voc_class_names();
  o.image_ids = stems;
  return o;
}

void expect_voc_detectron2s(const std::map<std::string, CocoEvalReport>& reports,
                            const nlohmann::json& expected, double& largest) {
  ASSERT_EQ(reports.size(), 1u);
  const auto& results = reports.at("bbox").results;
  ASSERT_EQ(results.size(), 3u);
  for (const char* key : {"AP", "AP50", "AP75"}) {
    const double diff = std::abs(results.at(key) - expected[key].get<double>());
    largest = std::max(largest, diff);
    EXPECT_LE(diff, 1e-9) << key;
  }
}

TEST(PascalVOCDetectionEvaluator, ModelOutputsGiveDetectron2sLinesAndNumbers) {
  if (!std::filesystem::exists(kVocEvaluatorFixtures + "expected_s1.json"))
    GTEST_SKIP() << "shared fixtures absent: " << kVocEvaluatorFixtures;
  const auto expected =
      nlohmann::json::parse(std::ifstream(kVocEvaluatorFixtures + "expected_s1.json"));
  double largest = 0;
  for (const auto& c : expected["cases"]) {
    const VocFixtureDetections f =
        read_voc_fixture(kVocEvaluatorFixtures + c["results_dir"].get<std::string>());
    for (const auto& [year, metric] :
         {std::pair{2007, "voc2007_11point"}, std::pair{2012, "area"}}) {
      PascalVOCDetectionEvaluator evaluator(voc_options_for(year, f.stems));
      for (const auto& stem : f.stems) evaluator.process(stem, f.per_image.at(stem));
      for (int k = 0; k < 20; ++k) {
        auto got = evaluator.lines(k), want = f.lines[k];
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        EXPECT_EQ(got, want) << data::voc_class_names()[k];
      }
      expect_voc_detectron2s(evaluator.evaluate(),
                             c["detectron2_pascal_voc_evaluator"][metric]["bbox"], largest);
    }
  }
  std::printf("PascalVOCDetectionEvaluator vs Detectron2: largest difference %.3g\n", largest);
}

TEST(PascalVOCDetectionEvaluator, TwoRanksGatherToRankZero) {
  if (!std::filesystem::exists(kVocEvaluatorFixtures + "expected_s1.json"))
    GTEST_SKIP() << "shared fixtures absent: " << kVocEvaluatorFixtures;
  const auto expected =
      nlohmann::json::parse(std::ifstream(kVocEvaluatorFixtures + "expected_s1.json"));
  const auto& c = expected["cases"][1];
  const VocFixtureDetections f =
      read_voc_fixture(kVocEvaluatorFixtures + c["results_dir"].get<std::string>());
  const size_t half = f.stems.size() / 2;
  auto rank1 = std::make_shared<PlayedRank>(1, std::deque<at::Tensor>{});
  {
    AsRank as(rank1);
    PascalVOCDetectionEvaluator evaluator(voc_options_for(2012, f.stems));
    for (size_t i = half; i < f.stems.size(); ++i)
      evaluator.process(f.stems[i], f.per_image.at(f.stems[i]));
    EXPECT_TRUE(evaluator.evaluate().empty());  // only rank 0 reports
  }
  auto rank0 = std::make_shared<PlayedRank>(0, rank1->sent);
  AsRank as(rank0);
  PascalVOCDetectionEvaluator evaluator(voc_options_for(2012, f.stems));
  for (size_t i = 0; i < half; ++i) evaluator.process(f.stems[i], f.per_image.at(f.stems[i]));
  double largest = 0;
  expect_voc_detectron2s(evaluator.evaluate(), c["detectron2_pascal_voc_evaluator"]["area"]["bbox"],
                         largest);
  std::printf("two ranks vs Detectron2: largest difference %.3g\n", largest);
}

TEST(PascalVOCDetectionEvaluator, RefusesBadSettingsAndClasses) {
  using detkit::testing::error_of;
  using detkit::testing::expect_contains;
  expect_contains(error_of([] { PascalVOCDetectionEvaluator e(voc_options_for(2010, {"a"})); }),
                  "dataset 'voc_fixture' has year 2010 (2007 or 2012)");
  PascalVOCDetectionEvaluator evaluator(voc_options_for(2007, {"a"}));
  structures::Instances out(10, 10);
  out.set("pred_boxes", structures::Boxes(at::zeros({1, 4})));
  out.set("scores", at::ones({1}));
  out.set("pred_classes", at::full({1}, 20, at::kLong));
  expect_contains(error_of([&] { evaluator.process("a", out); }),
                  "image 'a' has a detection of class 20, outside the dataset's 20 classes");
}

}  // namespace
}  // namespace detkit::evaluation
