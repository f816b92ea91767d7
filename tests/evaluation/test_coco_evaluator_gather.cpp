// Evaluation over two ranks: each rank's COCOEvaluator holds the detections of its shard of the
// images; evaluate() gathers them to rank 0, which must write the same results file and report
// the same AP as one process that saw every image. The two ranks are played in turn in this
// process: rank 1's evaluator runs first under a communicator that records what it sends, rank
// 0's then receives exactly that as rank 1's part of each all-gather.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <deque>
#include <filesystem>

#include "detkit/data/coco/coco.h"
#include "detkit/distributed/comm.h"
#include "detkit/evaluation/coco_evaluator.h"
#include "detkit/utils/file_io.h"
#include "tests/support/temp_dir.h"

namespace detkit::evaluation {
namespace {

const std::string kGroundTruth =
    std::string(DETKIT_SHARED_DIR) + "/data/coco_tiny/annotations/instances_val2017.json";

// Rank `rank` of two; all_gather returns this rank's input in its place and, in the other's,
// what `peer` holds (front first), recording this rank's inputs in `sent`.
class PlayedRank : public distributed::Communicator {
 public:
  PlayedRank(int rank, std::deque<at::Tensor> peer) : topology_{rank, 2, rank, 2}, peer_(std::move(peer)) {}
  const distributed::Topology& topology() const override { return topology_; }
  void barrier() override {}
  void all_reduce_sum(std::vector<at::Tensor>&) override { ADD_FAILURE() << "unexpected all-reduce"; }
  void broadcast(std::vector<at::Tensor>&, int) override { ADD_FAILURE() << "unexpected broadcast"; }
  std::vector<at::Tensor> all_gather(const at::Tensor& input) override {
    sent.push_back(input.clone());
    at::Tensor other = input.clone();
    if (!peer_.empty()) {
      other = peer_.front();
      peer_.pop_front();
    }
    return topology_.rank == 0 ? std::vector{input.clone(), other} : std::vector{other, input.clone()};
  }
  std::deque<at::Tensor> sent;

 private:
  distributed::Topology topology_;
  std::deque<at::Tensor> peer_;
};

class AsRank {
 public:
  explicit AsRank(std::shared_ptr<distributed::Communicator> c) : previous_(distributed::install(c)) {}
  ~AsRank() { distributed::install(previous_); }

 private:
  std::shared_ptr<distributed::Communicator> previous_;
};

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
    masks.push_back(at::from_blob(bytes.data(), {image.height, image.width}, at::kByte).to(at::kBool));
  };
  for (data::AnnotationView a : ds.annotations_of(i))
    if (!a.iscrowd() && a.segmentation_kind() == data::SegmentationKind::kPolygons)
      add(a.bbox(), a.class_index(), mask_ops::from_polygons(a.polygons(), image.height, image.width));
  add({1, 1, 20, 20}, 0, mask_ops::from_bbox({1, 1, 20, 20}, image.height, image.width));
  structures::Instances out(image.height, image.width);
  const auto n = static_cast<int64_t>(scores.size());
  out.set("pred_boxes", structures::Boxes(at::tensor(boxes).reshape({n, 4})));
  out.set("scores", at::tensor(scores));
  out.set("pred_classes", at::tensor(classes));
  out.set("pred_masks", at::stack(masks));
  return out;
}

TEST(COCOEvaluatorGather, TwoRanksReportWhatOneProcessReports) {
  if (!std::filesystem::exists(kGroundTruth)) GTEST_SKIP() << "shared data absent: " << kGroundTruth;
  auto ds = std::make_shared<const data::CocoDataset>(data::load_coco_json(kGroundTruth, ""));
  ASSERT_GE(ds->num_images(), 3u);
  const size_t n = std::min<size_t>(ds->num_images(), 6), half = n / 2;
  const std::vector<IouType> tasks = {IouType::Bbox, IouType::Segm};
  testing::TempDir dir("evaluator_gather");

  COCOEvaluator one(ds, tasks, dir.path("one"));
  for (size_t i = 0; i < n; ++i) one.process(ds->image(i).id, detections_for(*ds, i));
  const auto expected = one.evaluate();

  auto rank1 = std::make_shared<PlayedRank>(1, std::deque<at::Tensor>{});
  {
    AsRank as(rank1);
    COCOEvaluator evaluator(ds, tasks, dir.path("rank1"));
    for (size_t i = half; i < n; ++i) evaluator.process(ds->image(i).id, detections_for(*ds, i));
    EXPECT_TRUE(evaluator.evaluate().empty()) << "rank 1 reported";
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path("rank1"))) << "rank 1 wrote results";
  auto rank0 = std::make_shared<PlayedRank>(0, rank1->sent);
  std::map<std::string, CocoEvalReport> gathered;
  {
    AsRank as(rank0);
    COCOEvaluator evaluator(ds, tasks, dir.path("two"));
    for (size_t i = 0; i < half; ++i) evaluator.process(ds->image(i).id, detections_for(*ds, i));
    gathered = evaluator.evaluate();
    EXPECT_EQ(evaluator.num_detections(), one.num_detections());
  }
  ASSERT_EQ(gathered.size(), expected.size());
  for (const auto& [task, report] : expected) {
    std::cout << task << " AP " << report.stats[0] << " (one process) " << gathered.at(task).stats[0]
              << " (two ranks)\n";
    EXPECT_GT(report.stats[0], 0.05) << task;  // low: most images have no detections
    for (int k = 0; k < 12; ++k) EXPECT_EQ(gathered.at(task).stats[k], report.stats[k]) << task << " " << k;
  }
  EXPECT_EQ(read_file(dir.path("two/coco_instances_results.json")),
            read_file(dir.path("one/coco_instances_results.json")));
}

}  // namespace
}  // namespace detkit::evaluation
