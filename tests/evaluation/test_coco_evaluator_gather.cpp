// Evaluation over two ranks: each rank's COCOEvaluator holds the detections of its shard of the
// images; evaluate() gathers them to rank 0, which must write the same results file and report
// the same AP as one process that saw every image. The two ranks are played in turn in this
// process: rank 1's evaluator runs first under a communicator that records what it sends, rank
// 0's then receives exactly that as rank 1's part of each all-gather.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <deque>
#include <filesystem>
#include <functional>

#include "detkit/data/coco/coco.h"
#include "detkit/distributed/comm.h"
#include "detkit/evaluation/coco_evaluator.h"
#include "detkit/utils/file_io.h"
#include "tests/support/played_rank.h"
#include "tests/support/temp_dir.h"

namespace detkit::evaluation {
namespace {

using testing::AsRank;
using testing::PlayedRank;

const std::string kTinyValGroundTruth =
    std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_val2017.json";

// Detections near image i's ground truth (boxes shifted by 2 px, masks from the annotations),
// plus one that matches nothing.
structures::Instances detections_for(const data::CocoDataset& ds, size_t i) {
  const data::ImageView image = ds.image(i);
  std::vector<float> boxes, scores;
  std::vector<int64_t> classes;
  std::vector<at::Tensor> masks;
  float score = 0.95f;
  auto add = [&](std::array<double, 4> xywh, int cls, const mask_ops::RLE& rle) {
    for (double v : {xywh[0] + 2, xywh[1] + 2, xywh[0] + xywh[2] + 2, xywh[1] + xywh[3] + 2})
      boxes.push_back(static_cast<float>(v));
    scores.push_back(score);
    score *= 0.9f;
    classes.push_back(cls);
    auto bytes = mask_ops::decode(rle);  // row-major (h, w)
    masks.push_back(
        at::from_blob(bytes.data(), {image.height, image.width}, at::kByte).to(at::kBool));
  };
  for (data::AnnotationView a : ds.annotations_of(i))
    if (!a.iscrowd() && a.segmentation_kind() == data::SegmentationKind::kPolygons)
      add(a.bbox(), a.class_index(),
          mask_ops::from_polygons(a.polygons(), image.height, image.width));
  add({1, 1, 20, 20}, 0, mask_ops::from_bbox({1, 1, 20, 20}, image.height, image.width));
  structures::Instances out(image.height, image.width);
  const auto n = static_cast<int64_t>(scores.size());
  out.set("pred_boxes", structures::Boxes(at::tensor(boxes).reshape({n, 4})));
  out.set("scores", at::tensor(scores));
  out.set("pred_classes", at::tensor(classes));
  out.set("pred_masks", at::stack(masks));
  return out;
}

using Detections = std::function<structures::Instances(const data::CocoDataset&, size_t)>;

// The first n images' detections evaluated by one process and by two played ranks (rank 1 the
// second half); expects the same reports and the same results file, and returns the reports.
std::map<std::string, CocoEvalReport> expect_two_ranks_report_what_one_does(
    std::shared_ptr<const data::CocoDataset> ds, size_t n, const std::vector<IouType>& tasks,
    const Detections& detections) {
  const size_t half = n / 2;
  testing::TempDir dir("evaluator_gather");
  COCOEvaluator one(ds, tasks, dir.path("one"));
  for (size_t i = 0; i < n; ++i) one.process(ds->image(i).id, detections(*ds, i));
  const auto expected = one.evaluate();

  auto rank1 = std::make_shared<PlayedRank>(1, std::deque<at::Tensor>{});
  {
    AsRank as(rank1);
    COCOEvaluator evaluator(ds, tasks, dir.path("rank1"));
    for (size_t i = half; i < n; ++i) evaluator.process(ds->image(i).id, detections(*ds, i));
    EXPECT_TRUE(evaluator.evaluate().empty()) << "rank 1 reported";
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path("rank1"))) << "rank 1 wrote results";
  auto rank0 = std::make_shared<PlayedRank>(0, rank1->sent);
  std::map<std::string, CocoEvalReport> gathered;
  {
    AsRank as(rank0);
    COCOEvaluator evaluator(ds, tasks, dir.path("two"));
    for (size_t i = 0; i < half; ++i) evaluator.process(ds->image(i).id, detections(*ds, i));
    gathered = evaluator.evaluate();
    EXPECT_EQ(evaluator.num_detections(), one.num_detections());
  }
  EXPECT_EQ(gathered.size(), expected.size());
  for (const auto& [task, report] : expected) {
    std::cout << task << " AP " << report.stats[0] << " (one process) "
              << gathered.at(task).stats[0] << " (two ranks)\n";
    EXPECT_EQ(gathered.at(task).stats, report.stats) << task;
  }
  EXPECT_EQ(read_file(dir.path("two/coco_instances_results.json")),
            read_file(dir.path("one/coco_instances_results.json")));
  return expected;
}

TEST(COCOEvaluatorGather, TwoRanksReportWhatOneProcessReports) {
  if (!std::filesystem::exists(kTinyValGroundTruth))
    GTEST_SKIP() << "shared data absent: " << kTinyValGroundTruth;
  auto ds =
      std::make_shared<const data::CocoDataset>(data::load_coco_json(kTinyValGroundTruth, ""));
  ASSERT_GE(ds->num_images(), 3u);
  const auto reports = expect_two_ranks_report_what_one_does(
      ds, std::min<size_t>(ds->num_images(), 6), {IouType::Bbox, IouType::Segm}, detections_for);
  ASSERT_EQ(reports.size(), 2u);
  for (const auto& [task, report] : reports)
    EXPECT_GT(report.stats[0], 0.05) << task;  // low: most images have no detections
}

// Keypoint detections gathered from two ranks: the synthetic person keypoints, each detection
// the ground truth's keypoints in the model's continuous coordinates (+ 0.5), moved 1.5 px right.
TEST(COCOEvaluatorGather, TwoRanksReportKeypointAPAsOneProcess) {
  const std::string gt = std::string(DETKIT_SHARED_DIR) +
                         "/fixtures/cocoeval_keypoints/person_keypoints_val2017_synth.json";
  if (!std::filesystem::exists(gt)) GTEST_SKIP() << "shared fixture absent: " << gt;
  auto ds = std::make_shared<const data::CocoDataset>(data::load_coco_json(gt, ""));
  const Detections keypoints = [](const data::CocoDataset& d, size_t i) {
    std::vector<float> boxes, scores, points;
    for (data::AnnotationView a : d.annotations_of(i)) {
      if (a.num_keypoints() == 0) continue;
      const auto b = a.bbox();
      for (double v : {b[0], b[1], b[0] + b[2], b[1] + b[3]}) boxes.push_back(float(v));
      scores.push_back(0.9f - 0.01f * float(scores.size()));
      const data::CoordSpan k = a.keypoints();
      for (size_t j = 0; j < k.size; j += 3)
        points.insert(points.end(), {float(k[j] + 2.0), float(k[j + 1] + 0.5), 0.8f});
    }
    const auto n = static_cast<int64_t>(scores.size());
    structures::Instances out(d.image(i).height, d.image(i).width);
    out.set("pred_boxes", structures::Boxes(at::tensor(boxes).reshape({n, 4})));
    out.set("scores", at::tensor(scores));
    out.set("pred_classes", at::zeros({n}, at::kLong));
    out.set("pred_keypoints", at::tensor(points).reshape({n, 17, 3}));
    return out;
  };
  const auto reports = expect_two_ranks_report_what_one_does(
      ds, std::min<size_t>(ds->num_images(), 12), {IouType::Bbox, IouType::Keypoints}, keypoints);
  ASSERT_EQ(reports.count("keypoints"), 1u);
  EXPECT_EQ(reports.at("keypoints").stats.size(), 10u);
  EXPECT_GT(reports.at("keypoints").stats[1], 0.1);  // AP50
}

}  // namespace
}  // namespace detkit::evaluation

namespace detkit::evaluation {
namespace {

// A ProposalNetwork's output for image i: its ground-truth boxes moved by 3 px, scored by order,
// plus one proposal that covers nothing; odd images have none (an empty rank must still join).
structures::Instances proposals_for(const data::CocoDataset& ds, size_t i) {
  const data::ImageView image = ds.image(i);
  std::vector<float> boxes = {1, 1, 5, 5};
  for (data::AnnotationView a : ds.annotations_of(i)) {
    const auto b = a.bbox();
    for (double v : {b[0] + 3, b[1], b[0] + b[2] + 3, b[1] + b[3]})
      boxes.push_back(static_cast<float>(v));
  }
  const int64_t n = i % 2 == 1 ? 0 : static_cast<int64_t>(boxes.size() / 4);
  structures::Instances out(image.height, image.width);
  out.set("proposal_boxes", structures::Boxes(at::tensor(boxes).view({-1, 4}).narrow(0, 0, n)));
  out.set("objectness_logits", at::arange(n, at::kFloat).neg());
  return out;
}

TEST(COCOEvaluatorGather, TwoRanksReportTheProposalRecallOfOneProcess) {
  if (!std::filesystem::exists(kTinyValGroundTruth))
    GTEST_SKIP() << "shared data absent: " << kTinyValGroundTruth;
  auto ds =
      std::make_shared<const data::CocoDataset>(data::load_coco_json(kTinyValGroundTruth, ""));
  const size_t n = std::min<size_t>(ds->num_images(), 6);
  testing::TempDir dir("evaluator_gather_proposals");
  COCOEvaluator one(ds, {IouType::Bbox}, dir.path("one"));
  for (size_t i = 0; i < n; ++i) one.process(ds->image(i).id, proposals_for(*ds, i));
  const auto expected = one.evaluate();
  ASSERT_EQ(expected.count("box_proposals"), 1u);
  const auto want = detectron2_results(expected.at("box_proposals"));
  EXPECT_GT(want.at("AR@100"), 10.0);
  // Rank 1 holds only the last image (none of its proposals: an odd index, or one of several).
  auto rank1 = std::make_shared<PlayedRank>(1, std::deque<at::Tensor>{});
  {
    AsRank as(rank1);
    COCOEvaluator evaluator(ds, {IouType::Bbox}, dir.path("rank1"));
    evaluator.process(ds->image(n - 1).id, proposals_for(*ds, n - 1));
    EXPECT_TRUE(evaluator.evaluate().empty()) << "rank 1 reported";
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path("rank1"))) << "rank 1 wrote a file";
  auto rank0 = std::make_shared<PlayedRank>(0, rank1->sent);
  {
    AsRank as(rank0);
    COCOEvaluator evaluator(ds, {IouType::Bbox}, dir.path("two"));
    for (size_t i = 0; i + 1 < n; ++i) evaluator.process(ds->image(i).id, proposals_for(*ds, i));
    const auto gathered = evaluator.evaluate();
    ASSERT_EQ(gathered.count("box_proposals"), 1u);
    EXPECT_EQ(detectron2_results(gathered.at("box_proposals")), want);
    EXPECT_EQ(evaluator.num_proposal_images(), n);
  }
  EXPECT_EQ(read_file(dir.path("two/box_proposals.pkl")),
            read_file(dir.path("one/box_proposals.pkl")));
}

}  // namespace
}  // namespace detkit::evaluation
