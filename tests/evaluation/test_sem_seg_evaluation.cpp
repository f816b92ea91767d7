// SemSegEvaluator against Detectron2's (shared/fixtures/semseg_eval: its results dict, with and
// without Boundary IoU, its confusion matrices and its sem_seg_predictions.json), numpy's NaN
// rules on a hand-made case, two played ranks, and the errors bad label PNGs give.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "detkit/evaluation/sem_seg_evaluation.h"
#include "detkit/utils/file_io.h"
#include "tests/support/error_of.h"
#include "tests/support/played_rank.h"
#include "tests/support/temp_dir.h"

namespace detkit::evaluation {
namespace {

using testing::AsRank;
using testing::PlayedRank;

// Detectron2 logs its whole results dict (328 entries here): kept out of the test's output.
class QuietSemSegLog {
 public:
  QuietSemSegLog() : level_(spdlog::get_level()) { spdlog::set_level(spdlog::level::warn); }
  ~QuietSemSegLog() { spdlog::set_level(level_); }

 private:
  spdlog::level::level_enum level_;
};

const std::string kSemSegFixtures = std::string(DETKIT_SHARED_DIR) + "/fixtures/semseg_eval/";

struct SemSegFixture {
  nlohmann::json expected;
  std::vector<std::string> class_names;
  std::map<int64_t, int64_t> contiguous_to_dataset;
  std::vector<std::string> stems;  // gt/<stem>.png, in image-id order
};

SemSegFixture read_sem_seg_fixture() {
  SemSegFixture f;
  f.expected = nlohmann::json::parse(read_file(kSemSegFixtures + "expected_s1.json"));
  f.class_names = f.expected.at("stuff_classes").get<std::vector<std::string>>();
  for (const auto& [dataset_id, contiguous] :
       f.expected.at("stuff_dataset_id_to_contiguous_id").items())
    f.contiguous_to_dataset[contiguous.get<int64_t>()] = std::stoll(dataset_id);
  for (const auto& entry : std::filesystem::directory_iterator(kSemSegFixtures + "gt"))
    f.stems.push_back(entry.path().stem().string());
  std::sort(f.stems.begin(), f.stems.end());  // zero-padded COCO names: id order
  return f;
}

std::string sem_seg_file_name(const std::string& stem) {
  return "coco_tiny/val2017/" + stem + ".jpg";
}

// Feeds images [begin, end) of a case: as read from the PNGs, or as a model's (H, W) class tensor.
void process_sem_seg_case(SemSegEvaluator& evaluator, const SemSegFixture& f,
                          const std::string& predictions_dir, size_t begin, size_t end,
                          bool as_tensor) {
  for (size_t i = begin; i < end; ++i) {
    const std::string gt = kSemSegFixtures + "gt/" + f.stems[i] + ".png";
    const PixelMap pred =
        read_label_png(kSemSegFixtures + predictions_dir + "/" + f.stems[i] + ".png");
    if (!as_tensor) {
      evaluator.process(sem_seg_file_name(f.stems[i]), read_label_png(gt), pred, gt);
      continue;
    }
    const at::Tensor classes =
        at::tensor(pred.values, at::kLong).view({pred.height, pred.width}).to(at::kByte);
    evaluator.process(sem_seg_file_name(f.stems[i]), gt, classes);
  }
}

// Largest difference between our results and Detectron2's dict; NaN must meet null.
double largest_results_difference(const std::map<std::string, double>& ours,
                                  const nlohmann::json& theirs) {
  EXPECT_EQ(ours.size(), theirs.size());
  double largest = 0;
  for (const auto& [key, value] : theirs.items()) {
    const auto it = ours.find(key);
    if (it == ours.end()) {
      ADD_FAILURE() << "missing result " << key;
      continue;
    }
    if (value.is_null()) {
      EXPECT_TRUE(std::isnan(it->second)) << key << " = " << it->second << ", Detectron2: NaN";
      continue;
    }
    largest = std::max(largest, std::abs(it->second - value.get<double>()));
  }
  return largest;
}

void expect_matrix_nonzeros(const ConfusionMatrix& matrix, const nlohmann::json& nonzeros,
                            const std::string& what) {
  std::vector<std::array<int64_t, 3>> ours, theirs;
  const int64_t side = matrix.num_classes() + 1;
  for (int64_t p = 0; p < side; ++p)
    for (int64_t g = 0; g < side; ++g)
      if (matrix.at(p, g) != 0) ours.push_back({p, g, matrix.at(p, g)});
  for (const auto& e : nonzeros) theirs.push_back(e.get<std::array<int64_t, 3>>());
  std::sort(theirs.begin(), theirs.end());
  EXPECT_EQ(ours, theirs) << what;
}

TEST(SemSegEvaluator, ReproducesDetectron2OnTheFixture) {
  if (!std::filesystem::exists(kSemSegFixtures + "expected_s1.json"))
    GTEST_SKIP() << "fixture absent: " << kSemSegFixtures << " (shared/fixtures/semseg_eval)";
  const SemSegFixture f = read_sem_seg_fixture();
  ASSERT_EQ(f.stems.size(), 80u);
  const QuietSemSegLog quiet;
  const int64_t ignore = f.expected.at("ignore_label").get<int64_t>();
  for (const auto& c : f.expected.at("cases")) {
    const std::string name = c.at("predictions_dir").get<std::string>();
    testing::TempDir dir("semseg_" + name);
    // Boundary IoU on: Detectron2's run with OpenCV, whose other numbers are its run without.
    SemSegEvaluator evaluator(f.class_names, ignore, dir.path(), f.contiguous_to_dataset,
                              /*boundary_iou=*/true);
    process_sem_seg_case(evaluator, f, name, 0, f.stems.size(), /*as_tensor=*/false);
    const auto reports = evaluator.evaluate();
    ASSERT_EQ(reports.count("sem_seg"), 1u);
    const auto& results = reports.at("sem_seg").results;
    const double with_boundary = largest_results_difference(
        results, c.at("detectron2_sem_seg_evaluator_opencv").at("sem_seg"));
    std::map<std::string, double> plain;
    for (const auto& [key, value] : results)
      if (key.rfind("BoundaryIoU-", 0) != 0 && key.rfind("min(IoU, B-Iou)-", 0) != 0)
        plain[key] = value;
    const double without_boundary =
        largest_results_difference(plain, c.at("detectron2_sem_seg_evaluator").at("sem_seg"));
    expect_matrix_nonzeros(evaluator.confusion_matrix(), c.at("confusion_matrix_nonzero"),
                           name + " confusion matrix");
    expect_matrix_nonzeros(evaluator.boundary_confusion_matrix(),
                           c.at("boundary_confusion_matrix_nonzero"), name + " boundary matrix");
    const auto ours = nlohmann::json::parse(read_file(dir.path("sem_seg_predictions.json")));
    const auto theirs = nlohmann::json::parse(
        read_file(kSemSegFixtures + c.at("sem_seg_predictions").get<std::string>()));
    EXPECT_EQ(ours, theirs) << name << " sem_seg_predictions.json";
    std::cout << name << ": mIoU " << results.at("mIoU") << ", " << results.size()
              << " results; largest difference to Detectron2 " << without_boundary
              << " (without OpenCV), " << with_boundary << " (with OpenCV, Boundary IoU); "
              << ours.size() << " RLE entries as Detectron2's\n";
    EXPECT_LE(without_boundary, 1e-9);
    EXPECT_LE(with_boundary, 1e-9);
  }
}

TEST(SemSegEvaluator, TwoRanksReportWhatOneProcessReports) {
  if (!std::filesystem::exists(kSemSegFixtures + "expected_s1.json"))
    GTEST_SKIP() << "fixture absent: " << kSemSegFixtures;
  const SemSegFixture f = read_sem_seg_fixture();
  const size_t n = 6, half = 3;
  const QuietSemSegLog quiet;
  testing::TempDir dir("semseg_gather");
  auto make = [&](const std::string& sub) {
    return SemSegEvaluator(f.class_names, 255, dir.path(sub), f.contiguous_to_dataset,
                           /*boundary_iou=*/false);
  };
  SemSegEvaluator one = make("one");
  process_sem_seg_case(one, f, "pred_hard_s1", 0, n, /*as_tensor=*/true);
  const auto one_report = one.evaluate().at("sem_seg");
  const auto& expected = one_report.results;
  const std::string& one_summary = one_report.summary;

  auto rank1 = std::make_shared<PlayedRank>(1, std::deque<at::Tensor>{});
  {
    AsRank as(rank1);
    SemSegEvaluator evaluator = make("rank1");
    process_sem_seg_case(evaluator, f, "pred_hard_s1", half, n, /*as_tensor=*/true);
    EXPECT_TRUE(evaluator.evaluate().empty()) << "rank 1 reported";
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path("rank1/sem_seg_predictions.json")));
  auto rank0 = std::make_shared<PlayedRank>(0, rank1->sent);
  AsRank as(rank0);
  SemSegEvaluator evaluator = make("two");
  process_sem_seg_case(evaluator, f, "pred_hard_s1", 0, half, /*as_tensor=*/true);
  const auto gathered = evaluator.evaluate();
  ASSERT_EQ(gathered.count("sem_seg"), 1u);
  EXPECT_EQ(evaluator.confusion_matrix().counts(), one.confusion_matrix().counts());
  EXPECT_EQ(gathered.at("sem_seg").summary, one_summary);  // every value, NaNs included
  EXPECT_EQ(read_file(dir.path("two/sem_seg_predictions.json")),
            read_file(dir.path("one/sem_seg_predictions.json")));
  std::cout << "mIoU " << expected.at("mIoU") << " (one process) "
            << gathered.at("sem_seg").results.at("mIoU") << " (two ranks)\n";
}

// Three classes; class 2 is predicted but has no ground truth: its IoU and ACC are NaN and left
// out of the means, as numpy's masks leave them out in Detectron2.
TEST(SemSegEvaluator, ClassWithoutGroundTruthIsNaNAndLeftOutOfTheMeans) {
  const PixelMap gt{2, 3, {0, 0, 1, 1, 255, 0}};
  const PixelMap pred{2, 3, {0, 1, 1, 2, 2, 0}};
  SemSegEvaluator evaluator({"a", "b", "c"}, 255, "", std::nullopt, /*boundary_iou=*/false);
  evaluator.process("x.jpg", gt, pred, "x.png");
  const ConfusionMatrix& m = evaluator.confusion_matrix();
  EXPECT_EQ(m.at(0, 0), 2);
  EXPECT_EQ(m.at(1, 0), 1);
  EXPECT_EQ(m.at(1, 1), 1);
  EXPECT_EQ(m.at(2, 1), 1);
  EXPECT_EQ(m.at(2, 3), 1);  // predicted c on an ignored pixel: the ignore column
  const auto r = evaluator.evaluate().at("sem_seg").results;
  EXPECT_DOUBLE_EQ(r.at("IoU-a"), 100 * 2.0 / 3);
  EXPECT_DOUBLE_EQ(r.at("IoU-b"), 100 * 1.0 / 3);
  EXPECT_TRUE(std::isnan(r.at("IoU-c")));
  EXPECT_TRUE(std::isnan(r.at("ACC-c")));
  EXPECT_DOUBLE_EQ(r.at("ACC-a"), 100 * 2.0 / 3);
  EXPECT_DOUBLE_EQ(r.at("mIoU"), 50);
  EXPECT_DOUBLE_EQ(r.at("mACC"), 100 * (2.0 / 3 + 0.5) / 2);
  EXPECT_DOUBLE_EQ(r.at("fwIoU"), 100 * (2.0 / 3 * 0.6 + 1.0 / 3 * 0.4));
  EXPECT_DOUBLE_EQ(r.at("pACC"), 60);
  const std::string json = sem_seg_metrics_json(evaluator.metrics());
  EXPECT_NE(json.find("\"IoU\":[66.66666666666666,33.33333333333333,null]"), std::string::npos)
      << json;
}

TEST(SemSegEvaluator, ScoresAreTakenThroughTheirArgmax) {
  // (C, H, W) scores whose argmax over C is the class map {0, 1, 1, 2, 2, 0}.
  const at::Tensor scores = at::one_hot(at::tensor({0, 1, 1, 2, 2, 0}, at::kLong), 3)
                                .t()
                                .reshape({3, 2, 3})
                                .to(at::kFloat) *
                            0.7;
  const PixelMap classes = predicted_classes(scores, "x.jpg");
  EXPECT_EQ(classes.height, 2);
  EXPECT_EQ(classes.width, 3);
  EXPECT_EQ(classes.values, (std::vector<int64_t>{0, 1, 1, 2, 2, 0}));
  EXPECT_NE(testing::error_of([] { predicted_classes(at::zeros({4}), "img.jpg"); }).find("img.jpg"),
            std::string::npos);
}

TEST(SemSegEvaluator, BadLabelFilesAreNamedErrors) {
  testing::TempDir dir("semseg_errors");
  auto write_png = [&](const std::string& name, const cv::Mat& image) {
    const std::string path = dir.path(name);
    EXPECT_TRUE(cv::imwrite(path, image));
    return path;
  };
  const std::string good = write_png("good.png", cv::Mat(2, 3, CV_8U, cv::Scalar(1)));
  const std::string bad_label = write_png("bad_label.png", cv::Mat(2, 3, CV_8U, cv::Scalar(7)));
  const std::string rgb = write_png("rgb.png", cv::Mat(2, 3, CV_8UC3, cv::Scalar(1, 1, 1)));
  const std::string text = dir.write("text.png", "not an image");
  const at::Tensor pred23 = at::ones({2, 3}, at::kLong);
  auto error_processing = [&](const std::string& gt, const at::Tensor& pred) {
    SemSegEvaluator evaluator({"a", "b", "c"}, 255, dir.path("out"));
    return testing::error_of([&] { evaluator.process("img.jpg", gt, pred); });
  };
  testing::expect_contains(error_processing(dir.path("missing.png"), pred23), "missing.png");
  testing::expect_contains(error_processing(text, pred23), "text.png: not a PNG");
  testing::expect_contains(error_processing(rgb, pred23),
                           "rgb.png: semantic labels must be one channel");
  const std::string wrong_size = error_processing(good, at::ones({3, 3}, at::kLong));
  testing::expect_contains(wrong_size, "good.png");
  testing::expect_contains(wrong_size, "size 2x3");
  testing::expect_contains(error_processing(bad_label, pred23),
                           "bad_label.png: label 7 at (0, 0) is neither a class");
  testing::expect_contains(error_processing(good, at::full({2, 3}, 5, at::kLong)),
                           "img.jpg: predicted class 5");
  SemSegEvaluator unmapped({"a", "b", "c"}, 255, dir.path("out"),
                           std::map<int64_t, int64_t>{{0, 0}});
  testing::expect_contains(testing::error_of([&] { unmapped.process("img.jpg", good, pred23); }),
                           "img.jpg: predicted class 1 has no dataset id");
  EXPECT_FALSE(std::filesystem::exists(dir.path("out"))) << "a failed process wrote a file";
}

}  // namespace
}  // namespace detkit::evaluation
