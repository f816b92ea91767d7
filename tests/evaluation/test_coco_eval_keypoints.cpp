// Keypoint COCOeval (OKS): pycocotools' numbers on the synthetic person keypoints of ../shared,
// hand-worked OKS values, and results files with the wrong number of keypoints named.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "detkit/data/coco/coco.h"
#include "detkit/evaluation/coco_eval.h"
#include "detkit/evaluation/coco_evaluator.h"
#include "detkit/evaluation/coco_report.h"
#include "detkit/evaluation/coco_results.h"
#include "detkit/evaluation/keypoint_oks.h"
#include "detkit/utils/error.h"

namespace detkit::evaluation {
namespace {

const std::string kKeypointFixtures =
    std::string(DETKIT_SHARED_DIR) + "/fixtures/cocoeval_keypoints/";

TEST(KeypointCOCOeval, ReproducesPycocotoolsOnSyntheticPersonKeypoints) {
  if (!std::filesystem::exists(kKeypointFixtures + "expected_s1.json"))
    GTEST_SKIP() << "shared fixture absent: " << kKeypointFixtures;
  nlohmann::json expected =
      nlohmann::json::parse(std::ifstream(kKeypointFixtures + "expected_s1.json"));
  data::CocoDataset dataset =
      data::load_coco_json(kKeypointFixtures + expected["ground_truth"].get<std::string>(), "");
  CocoGroundTruth gt = ground_truth_from_dataset(dataset, IouType::Keypoints);
  size_t cases = 0;
  for (const auto& c : expected["cases"]) {
    ASSERT_EQ(parse_iou_type(c["iou_type"]), IouType::Keypoints);
    auto dts = load_coco_results(kKeypointFixtures + c["results"].get<std::string>(),
                                 IouType::Keypoints, gt.ids);
    EXPECT_EQ(dts.size(), c["num_detections"].get<size_t>());
    CocoEvalReport report = evaluate_coco(gt, dts, IouType::Keypoints);
    ASSERT_EQ(report.stats.size(), 10u);
    double max_diff = 0;
    for (size_t i = 0; i < 10; ++i) {
      const double want = c["stats"][i];
      max_diff = std::max(max_diff, std::abs(report.stats[i] - want));
      EXPECT_NEAR(report.stats[i], want, 1e-9) << c["results"] << " stat " << i;
    }
    const double want_ap = c["per_category_ap"]["1"];
    ASSERT_TRUE(report.per_category_ap.at(1).has_value());
    EXPECT_NEAR(*report.per_category_ap.at(1), want_ap, 1e-9);
    std::cout << "[ cocoeval keypoints ] " << c["results"].get<std::string>() << ": " << dts.size()
              << " detections, max |stat diff| " << max_diff << "\n";
    EXPECT_NE(report.summary.find("Average Precision  (AP) @[ IoU=0.50:0.95 | area=medium | "
                                  "maxDets= 20 ]"),
              std::string::npos)
        << report.summary;
    EXPECT_NE(detectron2_tables(report, gt.category_names).find("|  APm   |  APl   |"),
              std::string::npos);
    ++cases;
  }
  EXPECT_EQ(cases, 2u);
}

// OKS by hand: one ground-truth person of area 100 with two labelled keypoints and one not.
TEST(KeypointOks, MeanOverLabelledKeypointsAndBoxDistanceWithoutAny) {
  const std::vector<double> sigmas = {0.1, 0.2, 0.3};
  const std::vector<double> g = {10, 10, 2, 20, 20, 1, 0, 0, 0};
  const std::vector<double> exact = {10, 10, 0.9, 20, 20, 0.9, 99, 99, 0.1};
  const std::vector<double> off = {13, 14, 0.9, 20, 20, 0.9, 0, 0, 0.1};  // 5 px off on the first
  OksGroundTruth gt{&g, {5, 5, 20, 20}, 100};
  auto oks = keypoint_oks({&exact, &off}, {gt}, sigmas);
  ASSERT_EQ(oks.size(), 2u);
  EXPECT_DOUBLE_EQ(oks[0], 1.0);  // the unlabelled third keypoint does not count
  const double e = 25.0 / (0.2 * 0.2) / (100 + std::numeric_limits<double>::epsilon()) / 2;
  EXPECT_DOUBLE_EQ(oks[1], (std::exp(-e) + 1.0) / 2);

  // No labelled keypoint: distance outside the box grown by its size ([-15, 45] here).
  const std::vector<double> none = {0, 0, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<double> inside = {0, 0, 1, 40, 40, 1, -15, 45, 1};
  const std::vector<double> outside = {-25, 0, 1, 0, 0, 1, 0, 0, 1};  // 10 px left of it
  OksGroundTruth unlabelled{&none, {5, 5, 20, 20}, 100};
  oks = keypoint_oks({&inside, &outside}, {unlabelled}, sigmas);
  EXPECT_DOUBLE_EQ(oks[0], 1.0);
  const double e0 = 100.0 / (0.2 * 0.2) / (100 + std::numeric_limits<double>::epsilon()) / 2;
  EXPECT_DOUBLE_EQ(oks[1], (std::exp(-e0) + 2.0) / 3);
}

TEST(KeypointResults, WrongCountsAndValuesAreNamed) {
  GroundTruthIds ids{{1}, {1}};
  auto expect_error = [&](const std::string& json, const std::string& part) {
    try {
      parse_coco_results(json, "kp.json", IouType::Keypoints, ids, 2);
      ADD_FAILURE() << "no error for " << json;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_error(R"([{"image_id": 1, "category_id": 1, "score": 1, "keypoints": [1, 2, 3]}])",
               "kp.json: results[0]: \"keypoints\" holds 3 numbers; 2 keypoints (the OKS sigmas) "
               "need 6");
  expect_error(R"([{"image_id": 1, "category_id": 1, "score": 1}])",
               "results[0]: missing \"keypoints\"");
  expect_error(
      R"([{"image_id": 1, "category_id": 1, "score": 1, "keypoints": [1, 2, 3, 4, 5, "x"]}])",
      "\"keypoints\" must be a number");
  // loadRes: the area is the keypoints' extent, or the box's when the result has one.
  auto d = parse_coco_results(
      R"([{"image_id": 1, "category_id": 1, "score": 1, "keypoints": [1, 2, 1, 4, 8, 1]},
          {"image_id": 1, "category_id": 1, "score": 1, "keypoints": [1, 2, 1, 4, 8, 1],
           "bbox": [0, 0, 10, 10]}])",
      "kp.json", IouType::Keypoints, ids, 2);
  EXPECT_EQ(d[0].area, 18.0);
  EXPECT_EQ(d[0].bbox, (std::array<double, 4>{1, 2, 3, 6}));
  EXPECT_EQ(d[1].area, 100.0);
}

// Keypoint lists that do not fit the OKS sigmas are errors naming the object, in COCOeval and in
// the evaluator a model's predictions go through.
TEST(KeypointCOCOeval, KeypointCountsThatDoNotFitTheSigmasAreNamed) {
  EvalObject gt;
  gt.id = 5, gt.image_id = 1, gt.category_id = 1, gt.area = 100, gt.num_keypoints = 1;
  gt.keypoints = {1, 1, 2, 2, 2, 2};  // two keypoints
  EvalParams params = default_eval_params(IouType::Keypoints);
  try {
    COCOeval eval({gt}, {}, {1}, {1}, IouType::Keypoints, params);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ground-truth annotation 5 of image 1 has 6 keypoint "
                                         "values; the 17 OKS sigmas need 51"),
              std::string::npos)
        << e.what();
  }
  params.kpt_oks_sigmas = {0.1, 0.1};
  COCOeval fits({gt}, {}, {1}, {1}, IouType::Keypoints, params);  // two sigmas: accepted
}

TEST(KeypointCOCOevaluator, PredictionsOfAnotherShapeOrCountAreNamed) {
  const std::string gt = kKeypointFixtures + "person_keypoints_val2017_synth.json";
  if (!std::filesystem::exists(gt)) GTEST_SKIP() << "shared fixture absent: " << gt;
  auto ds = std::make_shared<const data::CocoDataset>(data::load_coco_json(gt, ""));
  structures::Instances p(ds->image(0).height, ds->image(0).width);
  p.set("pred_boxes", structures::Boxes(at::tensor({1.f, 1.f, 9.f, 9.f}).reshape({1, 4})));
  p.set("scores", at::tensor({0.9f}));
  p.set("pred_classes", at::zeros({1}, at::kLong));
  COCOEvaluator evaluator(ds, {IouType::Keypoints}, "");
  p.set("pred_keypoints", at::zeros({1, 17}));
  try {
    evaluator.process(ds->image(0).id, p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pred_keypoints must be (R, K, 3), got [1, 17]"),
              std::string::npos)
        << e.what();
  }
  p.set("pred_keypoints", at::zeros({1, 3, 3}));  // 3 keypoints, COCO's 17 sigmas
  evaluator.process(ds->image(0).id, p);
  try {
    evaluator.evaluate();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the model predicts 3 keypoints, but there are 17 OKS "
                                         "sigmas (TEST.KEYPOINT_OKS_SIGMAS"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace detkit::evaluation
