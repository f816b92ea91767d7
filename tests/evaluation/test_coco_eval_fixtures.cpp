// COCOeval reproduces pycocotools' numbers on the real val annotations of coco_tiny.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/evaluation/coco_eval.h"
#include "detkit/evaluation/coco_report.h"
#include "detkit/evaluation/coco_results.h"
#include "detkit/data/coco/coco.h"

namespace detkit::evaluation {
namespace {

const std::string kShared = DETKIT_SHARED_DIR;
const std::string kFixtures = kShared + "/fixtures/cocoeval/";
const std::string kGroundTruth = kShared + "/data/coco_tiny/annotations/instances_val2017.json";

struct GroundTruth {
  std::vector<EvalObject> objects;
  std::vector<int64_t> image_ids, category_ids;
  GroundTruthIds ids;
};

// Independent of detkit's dataset loader: annotations as pycocotools' annToRLE reads them.
GroundTruth read_ground_truth() {
  nlohmann::json j = nlohmann::json::parse(std::ifstream(kGroundTruth));
  GroundTruth gt;
  std::map<int64_t, std::pair<int64_t, int64_t>> sizes;
  for (const auto& image : j["images"]) {
    gt.image_ids.push_back(image["id"]);
    sizes[image["id"]] = {image["height"], image["width"]};
  }
  for (const auto& cat : j["categories"]) gt.category_ids.push_back(cat["id"]);
  for (const auto& a : j["annotations"]) {
    EvalObject o;
    o.id = a["id"];
    o.image_id = a["image_id"];
    o.category_id = a["category_id"];
    o.area = a["area"];
    o.iscrowd = a.value("iscrowd", 0) != 0;
    for (int i = 0; i < 4; ++i) o.bbox[i] = a["bbox"][i];
    auto [h, w] = sizes.at(o.image_id);
    const auto& seg = a["segmentation"];
    if (seg.is_array()) {
      o.rle = mask_ops::from_polygons(seg.get<std::vector<std::vector<double>>>(), h, w);
    } else if (seg["counts"].is_array()) {
      o.rle = mask_ops::from_uncompressed(seg["counts"].get<std::vector<int64_t>>(), h, w);
    } else {
      o.rle = mask_ops::from_string(seg["counts"].get<std::string>(), h, w);
    }
    gt.objects.push_back(std::move(o));
  }
  gt.ids.image_ids.insert(gt.image_ids.begin(), gt.image_ids.end());
  gt.ids.category_ids.insert(gt.category_ids.begin(), gt.category_ids.end());
  return gt;
}

}  // namespace

TEST(COCOevalFixtures, ReproducesPycocotoolsStatsAndPerCategoryAP) {
  if (!std::filesystem::exists(kFixtures + "expected_s1.json"))
    GTEST_SKIP() << "shared fixtures absent: " << kFixtures;
  GroundTruth gt = read_ground_truth();
  nlohmann::json expected = nlohmann::json::parse(std::ifstream(kFixtures + "expected_s1.json"));
  size_t cases = 0;
  for (const auto& c : expected["cases"]) {
    IouType type = c["iou_type"] == "bbox" ? IouType::Bbox : IouType::Segm;
    auto dts = load_coco_results(kFixtures + c["results"].get<std::string>(), type, gt.ids);
    COCOeval eval(gt.objects, dts, gt.image_ids, gt.category_ids, type);
    eval.evaluate();
    eval.accumulate();
    auto stats = eval.summarize();
    double max_diff = 0;
    for (int i = 0; i < 12; ++i) {
      double want = c["stats"][i];
      max_diff = std::max(max_diff, std::abs(stats[i] - want));
      EXPECT_NEAR(stats[i], want, 1e-9) << c["results"] << " stat " << i;
    }
    double max_cat_diff = 0;
    auto per_cat = eval.per_category_ap();
    for (const auto& [id, ap] : c["per_category_ap"].items()) {
      auto ours = per_cat.at(std::stoll(id));
      if (ap.is_null()) {
        EXPECT_FALSE(ours.has_value()) << "category " << id;
        continue;
      }
      ASSERT_TRUE(ours.has_value()) << "category " << id;
      max_cat_diff = std::max(max_cat_diff, std::abs(*ours - ap.get<double>()));
      EXPECT_NEAR(*ours, ap.get<double>(), 1e-9) << c["results"] << " category " << id;
    }
    EXPECT_EQ(per_cat.size(), c["per_category_ap"].size());
    std::cout << "[ cocoeval ] " << c["results"].get<std::string>() << ": " << dts.size()
              << " detections, max |stat diff| " << max_diff << ", max |per-category AP diff| "
              << max_cat_diff << "\n";
    ++cases;
  }
  EXPECT_EQ(cases, 4u);
}

}  // namespace detkit::evaluation

namespace detkit::evaluation {

// The same numbers through detkit's own pieces: the COCO loader's ground truth and the report.
TEST(COCOevalFixtures, LoaderGroundTruthGivesTheSameNumbers) {
  if (!std::filesystem::exists(kFixtures + "expected_s1.json"))
    GTEST_SKIP() << "shared fixtures absent: " << kFixtures;
  data::CocoDataset dataset = data::load_coco_json(kGroundTruth, "");
  EXPECT_EQ(dataset.stats().dropped_annotations, 0u);
  nlohmann::json expected = nlohmann::json::parse(std::ifstream(kFixtures + "expected_s1.json"));
  for (const auto& c : expected["cases"]) {
    IouType type = parse_iou_type(c["iou_type"]);
    CocoGroundTruth gt = ground_truth_from_dataset(dataset, type);
    auto report = evaluate_coco(gt, load_coco_results(kFixtures + c["results"].get<std::string>(),
                                                      type, gt.ids), type);
    for (int i = 0; i < 12; ++i) EXPECT_NEAR(report.stats[i], c["stats"][i].get<double>(), 1e-9);
    auto json = nlohmann::json::parse(report_json(report));
    EXPECT_EQ(json["per_category_ap"].size(), c["per_category_ap"].size());
    std::string tables = detectron2_tables(report, gt.category_names);
    EXPECT_NE(tables.find("| person "), std::string::npos) << tables;
  }
}

}  // namespace detkit::evaluation
