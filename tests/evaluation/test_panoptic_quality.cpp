// Panoptic quality against panopticapi's pq_compute (shared/fixtures/panoptic_pq: All / Things /
// Stuff, per-category scores and tp / fp / fn / IoU sums), COCOPanopticEvaluator on the same
// predictions in one process and on two played ranks, Detectron2's table, and the errors bad
// panoptic inputs give.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "detkit/evaluation/coco_panoptic_evaluator.h"
#include "detkit/evaluation/panoptic_quality.h"
#include "detkit/evaluation/panoptic_report.h"
#include "detkit/utils/file_io.h"
#include "tests/support/error_of.h"
#include "tests/support/played_rank.h"
#include "tests/support/temp_dir.h"

namespace detkit::evaluation {
namespace {

using testing::AsRank;
using testing::PlayedRank;

const std::string kPanopticFixtures = std::string(DETKIT_SHARED_DIR) + "/fixtures/panoptic_pq/";

bool panoptic_fixture_present() {
  return std::filesystem::exists(kPanopticFixtures + "expected_s1.json");
}

nlohmann::json panoptic_expected() {
  return nlohmann::json::parse(read_file(kPanopticFixtures + "expected_s1.json"));
}

// Largest difference to pq_compute's numbers; integer counts must be equal.
double largest_pq_difference(const PQResult& ours, const nlohmann::json& theirs) {
  double largest = 0;
  auto compare = [&](double mine, const nlohmann::json& value, const std::string& what) {
    const double diff = std::abs(mine - value.get<double>());
    EXPECT_LE(diff, 1e-9) << what;
    largest = std::max(largest, diff);
  };
  for (const auto& [name, average] : {std::pair{"All", ours.all}, std::pair{"Things", ours.things},
                                      std::pair{"Stuff", ours.stuff}}) {
    const auto& t = theirs.at(name);
    compare(average.pq, t.at("pq"), std::string(name) + " pq");
    compare(average.sq, t.at("sq"), std::string(name) + " sq");
    compare(average.rq, t.at("rq"), std::string(name) + " rq");
    EXPECT_EQ(average.n, t.at("n").get<int64_t>()) << name;
  }
  EXPECT_EQ(ours.per_class.size(), theirs.at("per_class").size());
  for (const auto& [id, scores] : ours.per_class) {
    const auto& t = theirs.at("per_class").at(std::to_string(id));
    compare(scores.pq, t.at("pq"), "pq of category " + std::to_string(id));
    compare(scores.sq, t.at("sq"), "sq of category " + std::to_string(id));
    compare(scores.rq, t.at("rq"), "rq of category " + std::to_string(id));
  }
  EXPECT_EQ(ours.counts.size(), theirs.at("per_class_counts").size());
  for (const auto& [id, t] : theirs.at("per_class_counts").items()) {
    const auto it = ours.counts.find(std::stoll(id));
    if (it == ours.counts.end()) {
      ADD_FAILURE() << "no counts for category " << id;
      continue;
    }
    EXPECT_EQ(it->second.tp, t.at("tp").get<int64_t>()) << "tp of category " << id;
    EXPECT_EQ(it->second.fp, t.at("fp").get<int64_t>()) << "fp of category " << id;
    EXPECT_EQ(it->second.fn, t.at("fn").get<int64_t>()) << "fn of category " << id;
    compare(it->second.iou, t.at("iou_sum"), "iou sum of category " + id);
  }
  return largest;
}

TEST(PanopticQuality, ReproducesPanopticapiOnTheFixture) {
  if (!panoptic_fixture_present())
    GTEST_SKIP() << "fixture absent: " << kPanopticFixtures << " (shared/fixtures/panoptic_pq)";
  const nlohmann::json expected = panoptic_expected();
  for (const auto& c : expected.at("cases")) {
    const PQResult result =
        pq_compute(kPanopticFixtures + expected.at("ground_truth").get<std::string>(),
                   kPanopticFixtures + c.at("predictions").get<std::string>(),
                   kPanopticFixtures + expected.at("ground_truth_folder").get<std::string>(),
                   kPanopticFixtures + c.at("prediction_folder").get<std::string>());
    const double largest = largest_pq_difference(result, c);
    int64_t tp = 0, fp = 0, fn = 0;
    for (const auto& [id, counts] : result.counts) {
      tp += counts.tp;
      fp += counts.fp;
      fn += counts.fn;
    }
    std::cout << c.at("predictions").get<std::string>() << ": PQ " << result.all.pq << " (" << tp
              << " tp, " << fp << " fp, " << fn
              << " fn, counts equal); largest difference to panopticapi " << largest << "\n";
  }
}

// The fixture's predictions handed to COCOPanopticEvaluator as a model's panoptic outputs
// (contiguous ids = dataset ids), images [begin, end).
void process_panoptic_case(COCOPanopticEvaluator& evaluator, const std::string& predictions,
                           size_t begin, size_t end) {
  const PanopticJson gt =
      load_panoptic_json(kPanopticFixtures + "panoptic_val2017_synth.json", true);
  std::map<int64_t, bool> isthing;
  for (const auto& c : gt.categories) isthing[c.id] = c.isthing;
  const PanopticJson pred = load_panoptic_json(kPanopticFixtures + predictions + ".json", false);
  for (size_t i = begin; i < end && i < pred.annotations.size(); ++i) {
    const PanopticAnnotation& a = pred.annotations[i];
    const PixelMap ids = read_panoptic_png(kPanopticFixtures + predictions + "/" + a.file_name);
    structures::PanopticOutput output;
    output.ids = at::empty({ids.height, ids.width}, at::kInt);
    std::copy(ids.values.begin(), ids.values.end(), output.ids.data_ptr<int32_t>());
    for (const PanopticSegmentInfo& s : a.segments_info) {
      structures::PanopticSegment segment;
      segment.id = static_cast<int32_t>(s.id);
      segment.category_id = s.category_id;
      segment.isthing = isthing.at(s.category_id);
      segment.score = 0.5;
      output.segments.push_back(segment);
    }
    const std::string stem = std::filesystem::path(a.file_name).stem().string();
    evaluator.process(a.image_id, "coco_tiny/val2017/" + stem + ".jpg", output);
  }
}

COCOPanopticEvaluator fixture_panoptic_evaluator(const std::string& output_dir) {
  const PanopticJson gt =
      load_panoptic_json(kPanopticFixtures + "panoptic_val2017_synth.json", true);
  std::map<int64_t, int64_t> things, stuff;
  for (const auto& c : gt.categories) (c.isthing ? things : stuff)[c.id] = c.id;
  return COCOPanopticEvaluator(kPanopticFixtures + "panoptic_val2017_synth.json",
                               kPanopticFixtures + "panoptic_val2017_synth", things, stuff,
                               output_dir);
}

TEST(COCOPanopticEvaluator, ReportsPanopticapisNumbersOnOneAndTwoRanks) {
  if (!panoptic_fixture_present()) GTEST_SKIP() << "fixture absent: " << kPanopticFixtures;
  const nlohmann::json hard = panoptic_expected().at("cases").at(1);
  ASSERT_EQ(hard.at("predictions"), "pq_hard_s1.json");
  testing::TempDir dir("panoptic_evaluator");
  COCOPanopticEvaluator one = fixture_panoptic_evaluator(dir.path("one"));
  process_panoptic_case(one, "pq_hard_s1", 0, 80);
  const auto reports = one.evaluate();
  ASSERT_EQ(reports.count("panoptic_seg"), 1u);
  const auto& results = reports.at("panoptic_seg").results;
  EXPECT_EQ(results.size(), 9u);
  EXPECT_DOUBLE_EQ(results.at("PQ"), 100 * hard.at("All").at("pq").get<double>());
  EXPECT_DOUBLE_EQ(results.at("SQ_th"), 100 * hard.at("Things").at("sq").get<double>());
  EXPECT_DOUBLE_EQ(results.at("RQ_st"), 100 * hard.at("Stuff").at("rq").get<double>());
  const double largest = largest_pq_difference(*one.pq_result(), hard);
  // predictions.json: the ground truth's JSON with the predictions as annotations; PNGs beside.
  const auto written = nlohmann::json::parse(read_file(dir.path("one/predictions.json")));
  EXPECT_EQ(written.at("annotations").size(), 80u);
  EXPECT_EQ(written.at("categories").size(), 83u);
  const std::string first = written.at("annotations").at(0).at("file_name");
  EXPECT_EQ(read_panoptic_png(dir.path("one/predictions/" + first)).values,
            read_panoptic_png(kPanopticFixtures + "pq_hard_s1/" + first).values);
  // The written files evaluate to the same numbers.
  const PQResult again = pq_compute(
      kPanopticFixtures + "panoptic_val2017_synth.json", dir.path("one/predictions.json"),
      kPanopticFixtures + "panoptic_val2017_synth", dir.path("one/predictions"));
  EXPECT_EQ(again.all.pq, one.pq_result()->all.pq);

  auto rank1 = std::make_shared<PlayedRank>(1, std::deque<at::Tensor>{});
  {
    AsRank as(rank1);
    COCOPanopticEvaluator evaluator = fixture_panoptic_evaluator(dir.path("rank1"));
    process_panoptic_case(evaluator, "pq_hard_s1", 40, 80);
    EXPECT_TRUE(evaluator.evaluate().empty()) << "rank 1 reported";
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path("rank1/predictions.json")));
  auto rank0 = std::make_shared<PlayedRank>(0, rank1->sent);
  AsRank as(rank0);
  COCOPanopticEvaluator evaluator = fixture_panoptic_evaluator(dir.path("two"));
  process_panoptic_case(evaluator, "pq_hard_s1", 0, 40);
  const auto gathered = evaluator.evaluate();
  ASSERT_EQ(gathered.count("panoptic_seg"), 1u);
  EXPECT_EQ(gathered.at("panoptic_seg").results, results);
  EXPECT_EQ(read_file(dir.path("two/predictions.json")),
            read_file(dir.path("one/predictions.json")));
  std::cout << "COCOPanopticEvaluator: PQ " << results.at("PQ") << " (one process), "
            << gathered.at("panoptic_seg").results.at("PQ")
            << " (two ranks); largest difference to panopticapi " << largest << "\n"
            << gathered.at("panoptic_seg").summary << "\n";
}

TEST(PanopticQuality, TableHasDetectron2sLayout) {
  PQResult r;
  r.all = {0.394069, 0.777634, 0.482561, 133};
  r.things = {0.458951, 0.808549, 0.555178, 80};
  r.stuff = {0.296137, 0.730954, 0.372944, 53};
  EXPECT_EQ(panoptic_results_table(r),
            "Panoptic Evaluation Results:\n"
            "|        |   PQ   |   SQ   |   RQ   |  #categories  |\n"
            "|:------:|:------:|:------:|:------:|:-------------:|\n"
            "|  All   | 39.407 | 77.763 | 48.256 |      133      |\n"
            "| Things | 45.895 | 80.855 | 55.518 |      80       |\n"
            "| Stuff  | 29.614 | 73.095 | 37.294 |      53       |");
}

// A one-image panoptic set in a temporary folder: ground truth 4x4 with a thing (id 1, category
// 1) on the left half and stuff (id 2, category 2) on the right; predictions as given.
struct TinyPanopticSet {
  testing::TempDir dir{"panoptic_errors"};
  std::string gt_json, pred_json, gt_folder = dir.path("gt"), pred_folder = dir.path("pred");

  TinyPanopticSet() {
    std::vector<int32_t> ids = {1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2};
    write_png("gt/a.png", ids, 4, 4);
    gt_json = dir.write("gt.json", R"({"categories": [{"id": 1, "name": "thing", "isthing": 1},
      {"id": 2, "name": "stuff", "isthing": 0}], "annotations": [{"image_id": 7,
      "file_name": "a.png", "segments_info": [{"id": 1, "category_id": 1, "iscrowd": 0,
      "area": 8}, {"id": 2, "category_id": 2, "iscrowd": 0, "area": 8}]}]})");
  }
  void write_png(const std::string& name, const std::vector<int32_t>& ids, int64_t h, int64_t w) {
    dir.write(name, encode_panoptic_png(ids.data(), h, w, name));
  }
  void predict(const std::string& segments_info, const std::vector<int32_t>& ids, int64_t h = 4,
               int64_t w = 4, int64_t image_id = 7) {
    write_png("pred/a.png", ids, h, w);
    pred_json = dir.write(
        "pred.json", R"({"annotations": [{"image_id": )" + std::to_string(image_id) +
                         R"(, "file_name": "a.png", "segments_info": )" + segments_info + "}]}");
  }
  std::string error() const {
    return testing::error_of([&] { pq_compute(gt_json, pred_json, gt_folder, pred_folder); });
  }
};

const std::vector<int32_t> kTinyIds = {5, 5, 9, 9, 5, 5, 9, 9, 5, 5, 9, 9, 5, 5, 9, 9};
const std::string kTinySegments = R"([{"id": 5, "category_id": 1}, {"id": 9, "category_id": 2}])";

TEST(PanopticQuality, PerfectPredictionScoresOne) {
  TinyPanopticSet set;
  set.predict(kTinySegments, kTinyIds);
  const PQResult r = pq_compute(set.gt_json, set.pred_json, set.gt_folder, set.pred_folder);
  EXPECT_EQ(r.all.pq, 1.0);
  EXPECT_EQ(r.things.n, 1);
  EXPECT_EQ(r.stuff.n, 1);
  EXPECT_EQ(pq_result_json(r),
            R"({"All":{"pq":1.0,"sq":1.0,"rq":1.0,"n":2},"Things":{"pq":1.0,"sq":1.0,"rq":1.0,)"
            R"("n":1},"Stuff":{"pq":1.0,"sq":1.0,"rq":1.0,"n":1},"per_category":{"1":{"pq":1.0,)"
            R"("sq":1.0,"rq":1.0},"2":{"pq":1.0,"sq":1.0,"rq":1.0}}})");
}

TEST(PanopticQuality, BadInputsAreNamedErrors) {
  TinyPanopticSet set;
  set.predict(kTinySegments, kTinyIds);
  std::filesystem::remove(set.pred_folder + "/a.png");
  testing::expect_contains(set.error(), set.pred_folder + "/a.png");

  set.predict(kTinySegments, std::vector<int32_t>(12, 5), 4, 3);
  testing::expect_contains(set.error(), "a.png (prediction of image_id 7 (a.png)): size 4x3");

  std::vector<int32_t> with_stray = kTinyIds;
  with_stray[0] = 77;
  set.predict(kTinySegments, with_stray);
  testing::expect_contains(set.error(), "segment id 77 is in the PNG of image_id 7");

  set.predict(R"([{"id": 5, "category_id": 1}, {"id": 9, "category_id": 2},
                  {"id": 11, "category_id": 2}])",
              kTinyIds);
  testing::expect_contains(set.error(),
                           "segment ids 11 of image_id 7 (a.png) are in segments_info "
                           "but have no pixel in the PNG");

  set.predict(R"([{"id": 5, "category_id": 1}, {"id": 9, "category_id": 99}])", kTinyIds);
  testing::expect_contains(set.error(),
                           "segment id 9 of image_id 7 (a.png) has unknown category_id 99");

  set.predict(kTinySegments, kTinyIds, 4, 4, /*image_id=*/8);
  testing::expect_contains(set.error(), "no prediction for the image with id 7 (a.png)");

  set.predict(R"([{"id": 5}])", kTinyIds);
  testing::expect_contains(set.error(),
                           "pred.json: annotations[0] (image_id 7): segments_info[0]: "
                           "missing \"category_id\"");

  set.predict(kTinySegments, kTinyIds);
  EXPECT_TRUE(cv::imwrite(set.pred_folder + "/a.png", cv::Mat(4, 4, CV_8U, cv::Scalar(5))));
  testing::expect_contains(set.error(), "a.png: a panoptic PNG must be 8-bit RGB");

  set.predict(kTinySegments, kTinyIds);
  std::filesystem::remove(set.gt_folder + "/a.png");
  testing::expect_contains(set.error(), set.gt_folder + "/a.png");
  testing::expect_contains(
      testing::error_of(
          [&] { pq_compute(set.gt_json, set.pred_json, set.dir.path("none"), set.pred_folder); }),
      "none with ground truth segmentations does not exist");
}

TEST(COCOPanopticEvaluator, BadOutputsAreNamedAndNothingIsHalfWritten) {
  TinyPanopticSet set;
  const std::string out = set.dir.path("out");
  COCOPanopticEvaluator evaluator(set.gt_json, set.gt_folder, {{0, 1}}, {{1, 2}}, out);
  structures::PanopticOutput output;
  output.ids = at::tensor(kTinyIds, at::kInt).view({4, 4});
  output.segments = {{5, true, 0, 0.9, 0, 0}, {9, false, 3, 0, -1, 8}};
  testing::expect_contains(testing::error_of([&] { evaluator.process(7, "dir/a.jpg", output); }),
                           "dir/a.jpg: segment 9 has stuff class 3, which the dataset's "
                           "stuff_dataset_id_to_contiguous_id does not map");
  output.segments[1].category_id = 1;
  output.ids[0][0] = 1 << 24;
  testing::expect_contains(testing::error_of([&] { evaluator.process(7, "dir/a.jpg", output); }),
                           "segment id 16777216 at (0, 0) does not fit");
  output.ids[0][0] = 5;
  evaluator.process(7, "dir/a.jpg", output);
  std::filesystem::remove(set.gt_folder + "/a.png");  // the ground truth PNG goes missing
  testing::expect_contains(testing::error_of([&] { evaluator.evaluate(); }),
                           set.gt_folder + "/a.png");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(out))
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  const auto written = nlohmann::ordered_json::parse(read_file(out + "/predictions.json"));
  EXPECT_EQ(written.at("annotations").at(0).at("segments_info").dump(),
            R"([{"id":5,"score":0.9,"category_id":1,"instance_id":0},)"
            R"({"id":9,"category_id":2,"area":8}])");
}

}  // namespace
}  // namespace detkit::evaluation
