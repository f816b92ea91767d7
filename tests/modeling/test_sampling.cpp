// detkit::modeling::subsample_labels: sample sizes, short supplies, ignored labels, a non-zero
// background label, reproducibility under a seeded generator, and parity with Detectron2's
// sampling (re-written in Python on torch.randperm with the same seed: identical indices).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <set>
#include <vector>

#include "detkit/modeling/sampling.h"
#include "tests/parity/oracle.h"
#include "tests/support/tensor_compare.h"

using detkit::testing::to_vector;

namespace detkit::modeling {
namespace {

// num_pos labels 1, num_neg labels 0, num_ignored labels -1, shuffled with a fixed seed.
at::Tensor make_labels(int64_t num_pos, int64_t num_neg, int64_t num_ignored) {
  const at::Tensor labels =
      at::cat({at::ones({num_pos}, at::kLong), at::zeros({num_neg}, at::kLong),
               at::full({num_ignored}, -1, at::kLong)});
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
  return labels.index_select(0, at::randperm(labels.numel(), gen, at::kLong));
}

at::Generator seeded(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

// Every index is distinct and carries a label in `allowed`.
void expect_distinct_with_labels(const at::Tensor& idx, const at::Tensor& labels,
                                 std::set<int64_t> allowed) {
  const std::vector<int64_t> v = to_vector(idx);
  EXPECT_EQ(std::set<int64_t>(v.begin(), v.end()).size(), v.size());
  for (int64_t i : v) EXPECT_TRUE(allowed.count(labels[i].item<int64_t>())) << "index " << i;
}

TEST(SubsampleLabelsTest, TakesTheFractionOfPositives) {
  const at::Tensor labels = make_labels(10, 100, 30);
  const SampledIndices s = subsample_labels(labels, 20, 0.25, 0, seeded(7));
  EXPECT_EQ(s.pos_idx.numel(), 5);
  EXPECT_EQ(s.neg_idx.numel(), 15);
  EXPECT_EQ(s.pos_idx.scalar_type(), at::kLong);
  expect_distinct_with_labels(s.pos_idx, labels, {1});
  expect_distinct_with_labels(s.neg_idx, labels, {0});
}

TEST(SubsampleLabelsTest, FewPositivesAreMadeUpWithNegatives) {
  const at::Tensor labels = make_labels(2, 100, 5);
  const SampledIndices s = subsample_labels(labels, 20, 0.5, 0, seeded(7));
  EXPECT_EQ(s.pos_idx.numel(), 2);
  EXPECT_EQ(s.neg_idx.numel(), 18);
}

TEST(SubsampleLabelsTest, FewOfBothTakesAll) {
  const at::Tensor labels = make_labels(3, 4, 50);
  const SampledIndices s = subsample_labels(labels, 256, 0.5, 0, seeded(7));
  EXPECT_EQ(s.pos_idx.numel(), 3);
  EXPECT_EQ(s.neg_idx.numel(), 4);
  expect_distinct_with_labels(s.pos_idx, labels, {1});
  expect_distinct_with_labels(s.neg_idx, labels, {0});
}

TEST(SubsampleLabelsTest, PositiveCountTruncates) {
  // int(7 * 0.5) = 3 positives, then 4 negatives.
  const at::Tensor labels = make_labels(10, 10, 0);
  const SampledIndices s = subsample_labels(labels, 7, 0.5, 0, seeded(7));
  EXPECT_EQ(s.pos_idx.numel(), 3);
  EXPECT_EQ(s.neg_idx.numel(), 4);
}

TEST(SubsampleLabelsTest, BackgroundLabelOfRoiHeads) {
  // ROI heads: classes 0..K-1 are foreground, K (here 3) is background.
  const at::Tensor labels = at::tensor({0, 3, 1, 3, -1, 2, 3}, at::kLong);
  const SampledIndices s = subsample_labels(labels, 100, 0.25, 3, seeded(2));
  std::vector<int64_t> pos = to_vector(s.pos_idx), neg = to_vector(s.neg_idx);
  std::sort(pos.begin(), pos.end());
  std::sort(neg.begin(), neg.end());
  // int(100 * 0.25) = 25 > 3 positives available.
  EXPECT_EQ(pos, (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(neg, (std::vector<int64_t>{1, 3, 6}));
}

TEST(SubsampleLabelsTest, EmptyAndZeroSamples) {
  const SampledIndices none = subsample_labels(at::zeros({0}, at::kLong), 256, 0.5, 0, seeded(1));
  EXPECT_EQ(none.pos_idx.numel(), 0);
  EXPECT_EQ(none.neg_idx.numel(), 0);
  const SampledIndices zero = subsample_labels(make_labels(5, 5, 0), 0, 0.5, 0, seeded(1));
  EXPECT_EQ(zero.pos_idx.numel() + zero.neg_idx.numel(), 0);
  const SampledIndices ignored = subsample_labels(at::full({6}, -1, at::kLong), 4, 0.5, 0);
  EXPECT_EQ(ignored.pos_idx.numel() + ignored.neg_idx.numel(), 0);
}

TEST(SubsampleLabelsTest, ReproducibleWithASeed) {
  const at::Tensor labels = make_labels(300, 3000, 100);
  const SampledIndices a = subsample_labels(labels, 256, 0.5, 0, seeded(42));
  const SampledIndices b = subsample_labels(labels, 256, 0.5, 0, seeded(42));
  const SampledIndices c = subsample_labels(labels, 256, 0.5, 0, seeded(43));
  EXPECT_TRUE(at::equal(a.pos_idx, b.pos_idx));
  EXPECT_TRUE(at::equal(a.neg_idx, b.neg_idx));
  EXPECT_FALSE(at::equal(a.pos_idx, c.pos_idx));
  EXPECT_FALSE(at::equal(a.neg_idx, c.neg_idx));
}

TEST(SubsampleLabelsTest, RejectsBadInput) {
  EXPECT_THROW(subsample_labels(at::zeros({2, 2}, at::kLong), 4, 0.5, 0), c10::Error);
  EXPECT_THROW(subsample_labels(at::zeros({4}, at::kLong), -1, 0.5, 0), c10::Error);
  EXPECT_THROW(subsample_labels(at::zeros({4}, at::kLong), 4, 1.5, 0), c10::Error);
}

TEST(SubsampleLabelsTest, MatchesDetectron2Sampling) {
  DETKIT_REQUIRE_ORACLE();
  struct Case {
    int64_t num_pos, num_neg, num_ignored, num_samples;
    double fraction;
    int64_t seed;
  };
  for (const Case& c : {Case{300, 20000, 500, 256, 0.5, 0}, Case{30, 20000, 0, 256, 0.5, 1},
                        Case{5000, 3, 10, 512, 0.25, 2}, Case{0, 50, 5, 64, 0.5, 3}}) {
    const at::Tensor labels = make_labels(c.num_pos, c.num_neg, c.num_ignored);
    const SampledIndices s = subsample_labels(labels, c.num_samples, c.fraction, 0, seeded(c.seed));
    const at::Tensor params = at::tensor(
        {static_cast<double>(c.num_samples), c.fraction, 0.0, static_cast<double>(c.seed)},
        at::kDouble);
    const auto want = testing::run_oracle("oracle_modeling.py", "sampling",
                                          {{"labels", labels}, {"params", params}});
    const bool same =
        at::equal(s.pos_idx, want.at("pos_idx")) && at::equal(s.neg_idx, want.at("neg_idx"));
    std::cout << "subsample_labels vs Detectron2 (Python, seed " << c.seed
              << "): " << s.pos_idx.numel() << " positives, " << s.neg_idx.numel() << " negatives, "
              << (same ? "identical indices" : "DIFFERENT indices") << "\n";
    EXPECT_TRUE(same);
  }
}

// ImageGenerators: an image with a sampling seed draws from a generator of its own, shared by
// the stages that sample for it, so its draws do not depend on the images batched before it;
// images without one (and code outside a scope) draw from the default generator.
TEST(ImageGenerators, ASeededImageDrawsTheSameAloneOrInABatch) {
  const at::Tensor labels = make_labels(300, 5000, 20);
  structures::ModelInput a, b, unseeded;
  a.sampling_seed = 7;
  b.sampling_seed = 9;
  auto two_stages = [&](size_t image) {  // as the RPN, then the ROI heads, draw for one image
    const SampledIndices first = subsample_labels(labels, 256, 0.5, 0, image_generator(image));
    const SampledIndices second = subsample_labels(labels, 256, 0.5, 0, image_generator(image));
    return at::cat({first.pos_idx, first.neg_idx, second.pos_idx, second.neg_idx});
  };
  at::Tensor alone, batched;
  {
    const ImageGenerators scope({b});
    alone = two_stages(0);
  }
  {
    const ImageGenerators scope({a, b});
    two_stages(0);
    batched = two_stages(1);
  }
  EXPECT_TRUE(at::equal(alone, batched));
  // The two stages drew different samples: one generator advancing, not reseeded per call.
  EXPECT_FALSE(at::equal(alone.slice(0, 0, 256), alone.slice(0, 256, 512)));
  EXPECT_FALSE(image_generator(0).has_value()) << "a generator outside any scope";
  {
    const ImageGenerators outer({a});
    {
      const ImageGenerators inner({unseeded});
      EXPECT_FALSE(image_generator(0).has_value()) << "an unseeded image got a generator";
    }
    EXPECT_TRUE(image_generator(0).has_value()) << "the enclosing scope was not restored";
  }
}

}  // namespace
}  // namespace detkit::modeling
