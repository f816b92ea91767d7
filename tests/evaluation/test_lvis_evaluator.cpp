// LVISEvaluator's edges, on a two-image LVIS file of its own: the class -> category id mapping
// (Detectron2's + 1, or the metadata's ids), NaN metrics without detections, no report without
// images or without annotations (a test set), and a class outside the mapping named.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "detkit/evaluation/lvis_evaluator.h"
#include "detkit/utils/file_io.h"
#include "tests/support/error_of.h"
#include "tests/support/temp_dir.h"

namespace detkit::evaluation {
namespace {

std::string tiny_lvis(bool with_annotations) {
  return std::string(R"({"images": [
    {"id": 1, "height": 20, "width": 20, "neg_category_ids": [2], "not_exhaustive_category_ids": []},
    {"id": 2, "height": 20, "width": 20, "neg_category_ids": [], "not_exhaustive_category_ids": []}],
  "categories": [{"id": 1, "name": "a", "frequency": "f"}, {"id": 2, "name": "b", "frequency": "r"}],
  "annotations": )") +
         (with_annotations
              ? R"([{"id": 7, "image_id": 1, "category_id": 1, "area": 16, "bbox": [2, 2, 4, 4],
                     "segmentation": [[2, 2, 6, 2, 6, 6, 2, 6]]},
                    {"id": 8, "image_id": 2, "category_id": 2, "area": 16, "bbox": [2, 2, 4, 4],
                     "segmentation": [[2, 2, 6, 2, 6, 6, 2, 6]]}]})"
              : "[]}");
}

// One box per class given, at the ground truth's place.
structures::Instances boxes_of(const std::vector<int64_t>& classes) {
  const auto n = static_cast<int64_t>(classes.size());
  std::vector<float> boxes;
  for (int64_t i = 0; i < n; ++i) boxes.insert(boxes.end(), {2, 2, 6, 6});
  structures::Instances out(20, 20);
  out.set("pred_boxes", structures::Boxes(at::tensor(boxes).reshape({n, 4})));
  out.set("scores", at::full({n}, 0.5f));
  out.set("pred_classes", at::tensor(classes).reshape({n}).to(at::kLong));
  return out;
}

TEST(LVISEvaluator, WritesCategoryIdsAsDetectron2Maps) {
  testing::TempDir dir("lvis_evaluator_ids");
  const std::string gt = dir.write("gt.json", tiny_lvis(true));
  // Detectron2's LVIS rule: category id = class + 1.
  LVISEvaluator plus_one(gt, {IouType::Bbox}, dir.path("plus_one"));
  plus_one.process(1, boxes_of({0}));
  plus_one.process(2, boxes_of({1}));
  auto reports = plus_one.evaluate();
  EXPECT_DOUBLE_EQ(reports.at("bbox").results.at("AP"), 100.0);
  EXPECT_DOUBLE_EQ(reports.at("bbox").results.at("APr"), 100.0);
  auto written = nlohmann::json::parse(read_file(dir.path("plus_one/lvis_instances_results.json")));
  EXPECT_EQ(written[0]["category_id"], 1);
  EXPECT_EQ(written[1]["category_id"], 2);
  // The metadata's ids (thing_dataset_id_to_contiguous_id inverted): class 0 is category 2.
  LVISEvaluator mapped(gt, {IouType::Bbox}, dir.path("mapped"), 300, {2, 1});
  mapped.process(1, boxes_of({1}));
  mapped.process(2, boxes_of({0}));
  reports = mapped.evaluate();
  EXPECT_DOUBLE_EQ(reports.at("bbox").results.at("AP"), 100.0);
  written = nlohmann::json::parse(read_file(dir.path("mapped/lvis_instances_results.json")));
  EXPECT_EQ(written[0]["category_id"], 1);
  LVISEvaluator bad(gt, {IouType::Bbox}, "", 300, {2, 1});
  EXPECT_EQ(testing::error_of([&] { bad.process(1, boxes_of({2})); }),
            "LVISEvaluator: image id 1: pred_classes holds 2, but the dataset has 2 classes");
}

TEST(LVISEvaluator, ReportsNaNWithoutDetectionsAndNothingWithoutImagesOrAnnotations) {
  testing::TempDir dir("lvis_evaluator_empty");
  const std::string gt = dir.write("gt.json", tiny_lvis(true));
  LVISEvaluator empty(gt, {}, "");
  empty.process(1, boxes_of({}));
  const auto reports = empty.evaluate();
  ASSERT_EQ(reports.size(), 1u);  // bbox only: no masks among no detections
  ASSERT_EQ(reports.at("bbox").results.size(), 9u);
  for (const auto& [metric, value] : reports.at("bbox").results)
    EXPECT_TRUE(std::isnan(value)) << metric;
  LVISEvaluator no_images(gt, {}, "");
  EXPECT_TRUE(no_images.evaluate().empty());
  // A test set's file (no annotations): the results are written, nothing is scored.
  const std::string test_set = dir.write("test.json", tiny_lvis(false));
  LVISEvaluator unscored(test_set, {}, dir.path("out"));
  unscored.process(1, boxes_of({0}));
  EXPECT_TRUE(unscored.evaluate().empty());
  EXPECT_EQ(nlohmann::json::parse(read_file(dir.path("out/lvis_instances_results.json"))).size(),
            1u);
}

}  // namespace
}  // namespace detkit::evaluation
