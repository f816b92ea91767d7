// LVISEval's own rules on hand-made cases (the federated rule, not-exhaustive categories, the
// per-image cap, ground truth without area, frequency groups), and the LVIS readers' named errors.
#include <gtest/gtest.h>

#include <cmath>

#include "detkit/evaluation/lvis_eval.h"
#include "detkit/evaluation/lvis_report.h"
#include "detkit/utils/error.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::evaluation {
namespace {

// Two 100 x 100 images; category 1 (frequent) has one box on image 1, category 2 (common) one
// box on image 2, category 3 (rare) none.
LvisGroundTruth two_images() {
  LvisGroundTruth gt;
  gt.file = "gt.json";
  gt.images = {{1, 100, 100, {}, {}}, {2, 100, 100, {}, {}}};
  gt.categories = {{1, "a", 'f'}, {2, "b", 'c'}, {3, "c", 'r'}};
  EvalObject a;
  a.id = 10, a.image_id = 1, a.category_id = 1, a.bbox = {0, 0, 10, 10}, a.area = 100;
  EvalObject b = a;
  b.id = 11, b.image_id = 2, b.category_id = 2;
  gt.annotations = {a, b};
  gt.annotation_ignore = {0, 0};
  return gt;
}

LvisResult lvis_box(int64_t image, int64_t category, double score, std::array<double, 4> xywh) {
  LvisResult r;
  r.object.image_id = image;
  r.object.category_id = category;
  r.object.score = score;
  r.object.bbox = xywh;
  r.has_bbox = true;
  return r;
}

double metric(const LvisEvalReport& report, const std::string& key) {
  for (const auto& [k, v] : report.results)
    if (k == key) return v;
  ADD_FAILURE() << "no " << key;
  return NAN;
}

TEST(LVISEval, AHigherScoredFalsePositiveHalvesAPUnlessTheCategoryIsNotExhaustive) {
  LvisGroundTruth gt = two_images();
  auto detections = [] {
    return std::vector<LvisResult>{lvis_box(1, 1, 0.5, {0, 0, 10, 10}),
                                   lvis_box(1, 1, 0.9, {50, 50, 10, 10}),
                                   lvis_box(2, 2, 0.7, {0, 0, 10, 10})};
  };
  // The false positive ranks first: precision 0.5 at full recall for category 1.
  LvisEvalReport report = evaluate_lvis(gt, detections(), IouType::Bbox);
  EXPECT_NEAR(report.per_category_ap.at(1).value(), 0.5, 1e-12);
  EXPECT_NEAR(report.per_category_ap.at(2).value(), 1.0, 1e-12);
  EXPECT_FALSE(report.per_category_ap.at(3));  // no ground truth: undefined
  EXPECT_NEAR(metric(report, "AP"), 0.75, 1e-12);
  EXPECT_NEAR(metric(report, "APf"), 0.5, 1e-12);
  EXPECT_NEAR(metric(report, "APc"), 1.0, 1e-12);
  EXPECT_EQ(metric(report, "APr"), -1.0);  // no rare category with ground truth
  EXPECT_EQ(metric(report, "APl"), -1.0);  // every box is small
  EXPECT_NEAR(metric(report, "AR@300"), 1.0, 1e-12);
  // Category 1 not exhaustively annotated on image 1: its unmatched detection is ignored.
  gt.images[0].not_exhaustive_category_ids = {1};
  report = evaluate_lvis(gt, detections(), IouType::Bbox);
  EXPECT_NEAR(report.per_category_ap.at(1).value(), 1.0, 1e-12);
  EXPECT_EQ(report.num_detections_evaluated, 3u);
}

TEST(LVISEval, DetectionsOfCategoriesNeitherAnnotatedNorNegativeAreNotEvaluated) {
  LvisGroundTruth gt = two_images();
  // A confident category-2 detection on image 1, where category 2 is not annotated.
  const auto detections = [] {
    return std::vector<LvisResult>{lvis_box(2, 2, 0.5, {0, 0, 10, 10}),
                                   lvis_box(1, 2, 0.9, {0, 0, 10, 10})};
  };
  LvisEvalReport report = evaluate_lvis(gt, detections(), IouType::Bbox);
  EXPECT_EQ(report.num_detections_evaluated, 1u);
  EXPECT_NEAR(report.per_category_ap.at(2).value(), 1.0, 1e-12);
  // Verified absent from image 1: now a false positive.
  gt.images[0].neg_category_ids = {2};
  report = evaluate_lvis(gt, detections(), IouType::Bbox);
  EXPECT_EQ(report.num_detections_evaluated, 2u);
  EXPECT_NEAR(report.per_category_ap.at(2).value(), 0.5, 1e-12);
}

TEST(LVISEval, GroundTruthWithoutAreaTakesNoPartAndIgnoreFlagsAreHonoured) {
  LvisGroundTruth gt = two_images();
  gt.annotations[1].area = 0;  // category 2's only box: out of play, so category 2 is undefined
  LvisEvalReport report = evaluate_lvis(gt, {lvis_box(2, 2, 0.5, {0, 0, 10, 10})}, IouType::Bbox);
  EXPECT_EQ(report.num_ground_truth, 1u);
  EXPECT_EQ(report.num_detections_evaluated, 0u);  // nor is category 2 present on image 2
  EXPECT_FALSE(report.per_category_ap.at(2));
  gt = two_images();
  gt.annotation_ignore[0] = 1;  // the file's "ignore": category 1 has nothing to find
  report = evaluate_lvis(gt, {lvis_box(1, 1, 0.5, {0, 0, 10, 10})}, IouType::Bbox);
  EXPECT_FALSE(report.per_category_ap.at(1));
}

TEST(LVISEval, KeepsTheHighestScoresPerImageUpToTheCapInAStableOrder) {
  const LvisGroundTruth gt = two_images();
  std::vector<LvisResult> results;
  for (int i = 0; i < 5; ++i) results.push_back(lvis_box(2, 2, i == 3 ? 0.9 : 0.1, {1, 1, 5, 5}));
  results.push_back(lvis_box(1, 1, 0.2, {0, 0, 10, 10}));
  for (size_t i = 0; i < results.size(); ++i) results[i].index = i;
  const auto kept = lvis_results(results, gt, IouType::Bbox, /*max_dets=*/3);
  // Image 2 first (it appears first): 0.9 then the first two of the 0.1 ties; then image 1.
  ASSERT_EQ(kept.size(), 4u);
  EXPECT_EQ(kept[0].score, 0.9);
  EXPECT_EQ(kept[1].score, 0.1);
  EXPECT_EQ(kept[3].image_id, 1);
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i].id, static_cast<int64_t>(i) + 1);
  EXPECT_EQ(kept[0].area, 25.0);
  EXPECT_EQ(lvis_results(results, gt, IouType::Bbox, /*max_dets=*/-1).size(), 6u);
}

TEST(LVISEval, ResultsTextAndSmallTableFollowLvisApiAndDetectron2) {
  const LvisEvalReport report =
      evaluate_lvis(two_images(), {lvis_box(1, 1, 0.5, {0, 0, 10, 10})}, IouType::Bbox);
  EXPECT_NE(report.summary.find(" Average Precision  (AP) @[ IoU=0.50      | area=   all | "
                                "maxDets=300 catIds=all] = 0.500\n"),
            std::string::npos)
      << report.summary;
  EXPECT_NE(report.summary.find("area=     s | maxDets=300 catIds=all] = 0.500"),
            std::string::npos);
  EXPECT_NE(report.summary.find("catIds=  r] = -1.000"), std::string::npos);
  EXPECT_EQ(small_table({{"AP", 40.2214}, {"AP50", 61.021}, {"APr", -100}, {"APc", NAN}}),
            "|   AP   |  AP50  |   APr    |  APc  |\n"
            "|:------:|:------:|:--------:|:-----:|\n"
            "| 40.221 | 61.021 | -100.000 |  nan  |");
}

// ---- The readers' named errors ----------------------------------------------------------------

const char* kImages =
    R"("images": [{"id": 1, "height": 10, "width": 10, "neg_category_ids": [2],
                   "not_exhaustive_category_ids": []}])";
const char* kCategories =
    R"("categories": [{"id": 1, "name": "a", "frequency": "f"},
                      {"id": 2, "name": "b", "frequency": "r"}])";
const char* kAnnotations =
    R"("annotations": [{"id": 5, "image_id": 1, "category_id": 1, "area": 4,
                        "bbox": [1, 1, 2, 2], "segmentation": [[1, 1, 3, 1, 3, 3, 1, 3]]}])";

std::string lvis_json(const std::string& images, const std::string& annotations,
                      const std::string& categories) {
  return "{" + images + ", " + annotations + ", " + categories + "}";
}

TEST(LVISGroundTruth, ReadsImagesCategoriesAndMasks) {
  testing::TempDir dir("lvis_gt_ok");
  const std::string path = dir.write("gt.json", lvis_json(kImages, kAnnotations, kCategories));
  EXPECT_TRUE(is_lvis_json(path));
  const LvisGroundTruth gt = load_lvis_ground_truth(path, IouType::Segm);
  ASSERT_EQ(gt.images.size(), 1u);
  EXPECT_EQ(gt.images[0].neg_category_ids, std::vector<int64_t>{2});
  EXPECT_EQ(gt.categories[1].frequency, 'r');
  ASSERT_EQ(gt.annotations.size(), 1u);
  EXPECT_EQ(mask_ops::area(gt.annotations[0].rle), 4u);
  const std::string coco = dir.write(
      "coco.json", R"({"images": [{"id": 1, "file_name": "a.jpg", "height": 2, "width": 2}],
                       "annotations": [], "categories": [{"id": 1, "name": "a"}]})");
  EXPECT_FALSE(is_lvis_json(coco));
  // Categories first: the first category decides.
  EXPECT_TRUE(is_lvis_json(dir.write(
      "categories_first.json",
      R"({"categories": [{"id": 1, "frequency": "f"}], "images": [], "annotations": []})")));
}

TEST(LVISGroundTruth, NamesTheFileAndTheIdOfBadInput) {
  testing::TempDir dir("lvis_gt_bad");
  auto error = [&](const std::string& text) {
    const std::string path = dir.write("bad.json", text);
    return testing::error_of([&] { load_lvis_ground_truth(path, IouType::Segm); });
  };
  const std::string file = dir.path("bad.json");
  EXPECT_EQ(error(lvis_json(kImages,
                            R"("annotations": [{"id": 5, "image_id": 1, "category_id": 7,
                                "area": 4, "bbox": [1, 1, 2, 2], "segmentation": [[1, 1, 3, 1, 3, 3]]}])",
                            kCategories)),
            file + ": annotations[0]: category_id 7 is not in categories (annotation id 5)");
  EXPECT_EQ(error(lvis_json(
                R"("images": [{"id": 1, "height": 10, "width": 10, "neg_category_ids": [9],
                               "not_exhaustive_category_ids": []}])",
                kAnnotations, kCategories)),
            file +
                ": images[0]: neg_category_ids holds category id 9, which is not in "
                "categories (image id 1)");
  const std::string twice =
      R"("images": [{"id": 1, "height": 10, "width": 10, "neg_category_ids": [],
                     "not_exhaustive_category_ids": []},
                    {"id": 1, "height": 10, "width": 10, "neg_category_ids": [],
                     "not_exhaustive_category_ids": []}])";
  EXPECT_EQ(error(lvis_json(twice, kAnnotations, kCategories)),
            file + ": images[1]: image id 1 is listed twice (also images[0])");
  EXPECT_EQ(error(lvis_json(kImages, kAnnotations,
                            R"("categories": [{"id": 1, "name": "a", "frequency": "x"},
                                              {"id": 2, "frequency": "r"}])")),
            file + ": categories[0].frequency: must be \"r\", \"c\" or \"f\" (category id 1)");
  EXPECT_EQ(error(lvis_json(R"("images": [{"id": 1, "height": 10, "width": 10,
                                          "not_exhaustive_category_ids": []}])",
                            kAnnotations, kCategories)),
            file + ": images[0]: missing key \"neg_category_ids\" (image id 1)");
  EXPECT_EQ(error(lvis_json(kImages,
                            R"("annotations": [{"id": 5, "image_id": 3, "category_id": 1,
                                "area": 4, "bbox": [1, 1, 2, 2], "segmentation": [[1, 1, 3, 1, 3, 3]]}])",
                            kCategories)),
            file + ": annotations[0]: image_id 3 is not in images (annotation id 5)");
  EXPECT_EQ(error(R"({"images": [], "categories": []})"),
            file + ": missing top-level key \"annotations\"");
}

TEST(LVISResults, NamesTheFileAndTheEntryOfBadDetections) {
  testing::TempDir dir("lvis_results_bad");
  const LvisGroundTruth gt = load_lvis_ground_truth(
      dir.write("gt.json", lvis_json(kImages, kAnnotations, kCategories)), IouType::Segm);
  auto error = [&](const std::string& text) {
    return testing::error_of([&] { parse_lvis_results(text, "r.json", gt); });
  };
  EXPECT_EQ(error(R"([{"image_id": 1, "category_id": 3, "score": 0.5, "bbox": [0, 0, 1, 1]}])"),
            "r.json: results[0]: category_id 3 is not in the ground truth's categories");
  EXPECT_EQ(error(R"([{"image_id": 1, "category_id": 1, "score": 0.5, "bbox": [0, 0, 1, 1]},
                      {"image_id": 4, "category_id": 1, "score": 0.5, "bbox": [0, 0, 1, 1]}])"),
            "r.json: results[1]: image_id 4 is not in the ground truth's images");
  EXPECT_EQ(error(R"([{"image_id": 1, "category_id": 1, "score": 0.5,
                       "segmentation": {"size": [5, 5], "counts": "0"}}])"),
            "r.json: results[0]: \"segmentation.size\" [5, 5] differs from image 1's [10, 10]");
  EXPECT_EQ(error(R"({"image_id": 1})"), "r.json: results must be a JSON list of detections");
  // The first detection has a box, so LVISResults takes every area from boxes.
  auto results = parse_lvis_results(
      R"([{"image_id": 1, "category_id": 1, "score": 0.5, "bbox": [0, 0, 1, 1]},
          {"image_id": 1, "category_id": 1, "score": 0.4,
           "segmentation": {"size": [10, 10], "counts": [100]}}])",
      "r.json", gt);
  EXPECT_EQ(testing::error_of([&] { lvis_results(results, gt, IouType::Segm, 300, "r.json"); }),
            "r.json: results[1]: has no \"bbox\", while the first detection has one (lvis-api's "
            "LVISResults takes every area from the box then)");
}

}  // namespace
}  // namespace detkit::evaluation
