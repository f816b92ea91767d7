// detkit::modeling::Matcher: hand-computed matches, the low-quality rule with ties, no ground
// truth / no predictions, invalid inputs, and parity with torchvision's Matcher.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <limits>
#include <vector>

#include "detkit/modeling/matcher.h"
#include "detkit/structures/boxes.h"
#include "detkit/utils/error.h"
#include "tests/parity/oracle.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::to_vector;

namespace detkit::modeling {
namespace {

at::Tensor quality(std::vector<float> values, int64_t m, int64_t n) {
  return at::tensor(values).reshape({m, n});
}

// RPN thresholds and labels: IoU < 0.3 negative, [0.3, 0.7) ignored, >= 0.7 positive.
Matcher rpn_matcher(bool allow_low_quality_matches) {
  return Matcher({0.3, 0.7}, {0, -1, 1}, allow_low_quality_matches);
}

TEST(MatcherTest, ThresholdsByHand) {
  // 2 ground truths x 5 predictions.
  const at::Tensor iou = quality({0.9f, 0.1f, 0.5f, 0.0f, 0.7f,  //
                                  0.2f, 0.8f, 0.6f, 0.29f, 0.3f},
                                 2, 5);
  const MatchResult r = rpn_matcher(false)(iou);
  EXPECT_EQ(r.matches.scalar_type(), at::kLong);
  EXPECT_EQ(r.match_labels.scalar_type(), at::kChar);
  EXPECT_EQ(to_vector(r.matches), (std::vector<int64_t>{0, 1, 1, 1, 0}));
  // Maxima 0.9, 0.8, 0.6, 0.29, 0.7: the bounds belong to the upper interval.
  EXPECT_EQ(to_vector(r.match_labels), (std::vector<int64_t>{1, 1, -1, 0, 1}));
}

TEST(MatcherTest, LowQualityMatchesIncludeTies) {
  // Ground truth 0's best is 0.4, reached by predictions 1 and 3 (a tie); ground truth 1's best
  // is 0.25 at prediction 0. All lie below 0.7, yet these three become positives.
  const at::Tensor iou = quality({0.1f, 0.4f, 0.2f, 0.4f, 0.35f,  //
                                  0.25f, 0.0f, 0.1f, 0.1f, 0.05f},
                                 2, 5);
  const MatchResult plain = rpn_matcher(false)(iou);
  EXPECT_EQ(to_vector(plain.match_labels), (std::vector<int64_t>{0, -1, 0, -1, -1}));
  const MatchResult low = rpn_matcher(true)(iou);
  EXPECT_EQ(to_vector(low.match_labels), (std::vector<int64_t>{1, 1, 0, 1, -1}));
  // The matched indices stay each prediction's own best ground truth.
  EXPECT_EQ(to_vector(low.matches), (std::vector<int64_t>{1, 0, 0, 0, 0}));
}

TEST(MatcherTest, LowQualityRuleOnGroundTruthWithoutOverlap) {
  // Detectron2's rule as written: a ground truth that overlaps nothing has best quality 0, so
  // every prediction with quality 0 against it is labelled positive.
  const at::Tensor iou = quality({0.9f, 0.0f, 0.0f,  //
                                  0.0f, 0.0f, 0.0f},
                                 2, 3);
  const MatchResult r = rpn_matcher(true)(iou);
  EXPECT_EQ(to_vector(r.match_labels), (std::vector<int64_t>{1, 1, 1}));
}

TEST(MatcherTest, AllBelowThresholds) {
  const at::Tensor iou = at::full({3, 4}, 0.1f);
  const MatchResult r = rpn_matcher(false)(iou);
  EXPECT_EQ(to_vector(r.match_labels), (std::vector<int64_t>{0, 0, 0, 0}));
  // Ties over ground truths go to the first.
  EXPECT_EQ(to_vector(r.matches), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(MatcherTest, NoGroundTruth) {
  const MatchResult r = rpn_matcher(true)(at::zeros({0, 4}));
  EXPECT_EQ(to_vector(r.matches), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(to_vector(r.match_labels), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(r.match_labels.scalar_type(), at::kChar);
  // labels[0] is what an empty image gets: here "ignore".
  const Matcher ignoring({0.3, 0.5, 0.7}, {-1, 0, -1, 1});
  EXPECT_EQ(to_vector(ignoring(at::zeros({0, 3})).match_labels),
            (std::vector<int64_t>{-1, -1, -1}));
}

TEST(MatcherTest, NoPredictions) {
  const MatchResult r = rpn_matcher(true)(at::zeros({3, 0}));
  EXPECT_EQ(r.matches.numel(), 0);
  EXPECT_EQ(r.match_labels.numel(), 0);
}

TEST(MatcherTest, RoiHeadsStyleSingleThreshold) {
  // ROI heads: thresholds (0.5), labels (0, 1).
  const Matcher m({0.5}, {0, 1});
  const MatchResult r = m(quality({0.49f, 0.5f, 0.51f, 0.0f}, 1, 4));
  EXPECT_EQ(to_vector(r.match_labels), (std::vector<int64_t>{0, 1, 1, 0}));
}

TEST(MatcherTest, RejectsBadInput) {
  EXPECT_THROW(Matcher({0.0, 0.7}, {0, -1, 1}), detkit::Error);
  EXPECT_THROW(Matcher({0.7, 0.3}, {0, -1, 1}), detkit::Error);
  EXPECT_THROW(Matcher({0.3, 0.7}, {0, 2, 1}), detkit::Error);
  EXPECT_THROW(Matcher({0.3, 0.7}, {0, 1}), detkit::Error);
  EXPECT_THROW(Matcher({}, {0}), detkit::Error);
  const Matcher m = rpn_matcher(true);
  EXPECT_THROW(m(quality({0.5f, -0.1f}, 1, 2)), c10::Error);
  EXPECT_THROW(m(quality({0.5f, std::numeric_limits<float>::quiet_NaN()}, 1, 2)), c10::Error);
  EXPECT_THROW(m(at::zeros({4})), c10::Error);
}

// torchvision's matches (-1 below low, -2 between) as Detectron2's labels.
at::Tensor labels_from_torchvision(const at::Tensor& tv) {
  return at::where(tv == -1, at::zeros_like(tv),
                   at::where(tv == -2, -at::ones_like(tv), at::ones_like(tv)));
}

TEST(MatcherTest, MatchesTorchvisionMatcher) {
  DETKIT_REQUIRE_ORACLE();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  for (int64_t num_gt : {1, 4, 20}) {
    // Predictions: random boxes plus exact copies (ties in IoU) and the ground truths themselves.
    const at::Tensor gt_xy = at::rand({num_gt, 2}, gen) * 80;
    const at::Tensor gt = at::cat({gt_xy, gt_xy + at::rand({num_gt, 2}, gen) * 40 + 5}, 1);
    const at::Tensor xy = at::rand({300, 2}, gen) * 100;
    at::Tensor preds = at::cat({xy, xy + at::rand({300, 2}, gen) * 50 + 2}, 1);
    preds = at::cat({preds, preds.slice(0, 0, 40), gt.slice(0, 0, 1)}, 0);
    const at::Tensor iou =
        structures::pairwise_iou(structures::Boxes(gt), structures::Boxes(preds));
    for (bool allow : {false, true}) {
      const MatchResult r = Matcher({0.3, 0.7}, {0, -1, 1}, allow)(iou);
      const at::Tensor params = at::tensor({0.3, 0.7, allow ? 1.0 : 0.0}, at::kDouble);
      const at::Tensor tv = testing::run_oracle("oracle_modeling.py", "matcher",
                                                {{"quality", iou}, {"params", params}})
                                .at("matches");
      const at::Tensor want_labels = labels_from_torchvision(tv);
      const int64_t label_mismatches =
          (want_labels != r.match_labels.to(at::kLong)).sum().item<int64_t>();
      const at::Tensor matched = tv >= 0;
      const int64_t index_mismatches =
          (tv.index({matched}) != r.matches.index({matched})).sum().item<int64_t>();
      std::cout << "Matcher vs torchvision, " << num_gt << " gt x " << preds.size(0)
                << " predictions, low-quality " << allow << ": " << label_mismatches
                << " label and " << index_mismatches << " index mismatches, "
                << matched.sum().item<int64_t>() << " positives\n";
      EXPECT_EQ(label_mismatches, 0);
      EXPECT_EQ(index_mismatches, 0);
    }
  }
}

}  // namespace
}  // namespace detkit::modeling
