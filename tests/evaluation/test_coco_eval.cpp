// COCOeval semantics on hand-made cases whose numbers can be worked out on paper.
#include <gtest/gtest.h>

#include "detkit/evaluation/coco_eval.h"

namespace detkit::evaluation {
namespace {

EvalObject box(int64_t id, int64_t image, int64_t cat, std::array<double, 4> xywh,
               double score = 0, bool crowd = false) {
  EvalObject o;
  o.id = id;
  o.image_id = image;
  o.category_id = cat;
  o.bbox = xywh;
  o.area = xywh[2] * xywh[3];
  o.score = score;
  o.iscrowd = crowd;
  return o;
}

std::vector<double> run(std::vector<EvalObject> gts, std::vector<EvalObject> dts,
                           std::vector<int64_t> images, std::vector<int64_t> cats,
                           EvalParams params = {}) {
  COCOeval eval(std::move(gts), std::move(dts), std::move(images), std::move(cats), IouType::Bbox,
                std::move(params));
  eval.evaluate();
  eval.accumulate();
  return eval.summarize();
}

}  // namespace

TEST(COCOeval, LinspaceMatchesNumpy) {
  auto t = linspace(0.5, 0.95, 10);
  EXPECT_EQ(t[0], 0.5);
  EXPECT_EQ(t[5], 0.75);  // summarize() finds AP75 by exact comparison
  EXPECT_EQ(t[9], 0.95);
  EXPECT_EQ(linspace(0, 1, 101)[7], 7 * 0.01);
}

TEST(COCOeval, PerfectDetectionsScoreOne) {
  // One large box (area 10000) per image, detected exactly.
  auto stats = run({box(1, 1, 1, {0, 0, 100, 100}), box(2, 2, 1, {10, 10, 100, 100})},
                   {box(1, 1, 1, {0, 0, 100, 100}, 0.9), box(2, 2, 1, {10, 10, 100, 100}, 0.8)},
                   {1, 2}, {1});
  EXPECT_DOUBLE_EQ(stats[0], 1.0);
  EXPECT_DOUBLE_EQ(stats[1], 1.0);
  EXPECT_EQ(stats[3], -1.0);  // no small ground truth: undefined
  EXPECT_EQ(stats[4], -1.0);
  EXPECT_DOUBLE_EQ(stats[5], 1.0);
  EXPECT_DOUBLE_EQ(stats[6], 1.0);
}

TEST(COCOeval, FalsePositiveAboveTheTruePositiveHalvesPrecision) {
  // Ranked: FP (0.9), TP (0.8). Precision after monotone envelope: 0.5 at every recall <= 1.
  auto stats = run({box(1, 1, 1, {0, 0, 100, 100})},
                   {box(1, 1, 1, {500, 500, 50, 50}, 0.9), box(2, 1, 1, {0, 0, 100, 100}, 0.8)},
                   {1}, {1});
  EXPECT_NEAR(stats[1], 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(stats[8], 1.0);  // AR@100
  EXPECT_DOUBLE_EQ(stats[6], 0.0);  // AR@1: only the FP is kept
}

TEST(COCOeval, CrowdMatchesAreIgnoredNotFalsePositives) {
  // A crowd region and a regular object; two detections fall inside the crowd region.
  std::vector<EvalObject> gts = {box(1, 1, 1, {0, 0, 200, 200}, 0, /*crowd=*/true),
                                 box(2, 1, 1, {300, 300, 100, 100})};
  std::vector<EvalObject> dts = {box(1, 1, 1, {10, 10, 50, 50}, 0.95),
                                 box(2, 1, 1, {60, 60, 50, 50}, 0.9),
                                 box(3, 1, 1, {300, 300, 100, 100}, 0.5)};
  auto stats = run(gts, dts, {1}, {1});
  EXPECT_DOUBLE_EQ(stats[0], 1.0);  // both crowd hits ignored; the real object is found
}

TEST(COCOeval, NoDetectionsGiveZerosAndUndefinedGivesMinusOne) {
  auto stats = run({box(1, 1, 1, {0, 0, 10, 10})}, {}, {1}, {1});
  EXPECT_EQ(stats[0], 0.0);
  EXPECT_EQ(stats[3], 0.0);   // the GT is small (area 100)
  EXPECT_EQ(stats[4], -1.0);  // no medium GT
  EXPECT_EQ(stats[8], 0.0);
}

TEST(COCOeval, MaxDetsCutsLowScoresPerImage) {
  EvalParams params;
  params.max_dets = {1, 2, 3};
  std::vector<EvalObject> gts = {box(1, 1, 1, {0, 0, 100, 100})};
  std::vector<EvalObject> dts;
  for (int i = 0; i < 3; ++i) dts.push_back(box(i + 1, 1, 1, {500, 500, 50, 50}, 0.9 - 0.1 * i));
  dts.push_back(box(4, 1, 1, {0, 0, 100, 100}, 0.1));  // the only TP, ranked 4th: cut
  auto stats = run(gts, dts, {1}, {1}, params);
  EXPECT_EQ(stats[0], -1.0);  // maxDets 100 is not among the parameters: undefined
  EXPECT_EQ(stats[8], 0.0);   // AR@3: the TP was cut
}

TEST(COCOeval, UseCatsFalseIgnoresCategories) {
  EvalParams params;
  params.use_cats = false;
  auto stats = run({box(1, 1, 1, {0, 0, 100, 100})}, {box(1, 1, 2, {0, 0, 100, 100}, 0.9)}, {1},
                   {1, 2}, params);
  EXPECT_DOUBLE_EQ(stats[0], 1.0);
  auto with_cats = run({box(1, 1, 1, {0, 0, 100, 100})}, {box(1, 1, 2, {0, 0, 100, 100}, 0.9)},
                       {1}, {1, 2});
  EXPECT_EQ(with_cats[0], 0.0);
}

TEST(COCOeval, SummaryTextHasPycocotoolsLayout) {
  COCOeval eval({box(1, 1, 1, {0, 0, 100, 100})}, {box(1, 1, 1, {0, 0, 100, 100}, 0.9)}, {1}, {1},
                IouType::Bbox);
  eval.evaluate();
  eval.accumulate();
  std::string text = eval.summary_text();
  EXPECT_NE(text.find(" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 1.000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" Average Recall     (AR) @[ IoU=0.50:0.95 | area= large | maxDets=100 ] = 1.000"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("area= small | maxDets=100 ] = -1.000"), std::string::npos) << text;
}

}  // namespace detkit::evaluation
