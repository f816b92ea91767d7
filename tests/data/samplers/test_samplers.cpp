// Samplers: Detectron2's index streams (torch generator), rank sharding, repeat factors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "detkit/data/samplers/samplers.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

std::vector<size_t> take(Sampler& sampler, size_t n) {
  std::vector<size_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(*sampler.next());
  return out;
}

TEST(TrainingSampler, IsDetectron2sStreamForTheSeed) {
  // Python: g = torch.Generator(); g.manual_seed(42); torch.randperm(10, generator=g), twice.
  TrainingSampler sampler(10, 42);
  EXPECT_EQ(take(sampler, 20), (std::vector<size_t>{2, 6, 1, 8, 4, 5, 0, 9, 3, 7,  //
                                                    3, 5, 8, 9, 4, 6, 1, 0, 7, 2}));
}

TEST(TrainingSampler, RanksTakeInterleavedDisjointShares) {
  TrainingSampler whole(10, 42);
  const std::vector<size_t> stream = take(whole, 30);
  std::multiset<size_t> first_epoch;
  for (int rank = 0; rank < 3; ++rank) {
    TrainingSampler shard(10, 42, rank, 3);
    const std::vector<size_t> mine = take(shard, 10);
    for (size_t k = 0; k < mine.size(); ++k) EXPECT_EQ(mine[k], stream[rank + 3 * k]);
    for (size_t k = 0; k < mine.size() && rank + 3 * k < 10; ++k) first_epoch.insert(mine[k]);
  }
  // The first epoch's 10 entries, split over 3 ranks, are each index exactly once.
  std::vector<size_t> all(first_epoch.begin(), first_epoch.end()), expected(10);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(all, expected);
}

TEST(TrainingSampler, SeedsGiveDifferentStreamsAndNoShuffleIsInOrder) {
  TrainingSampler a(50, 1), b(50, 2), c(5, 1, 0, 1, false);
  EXPECT_NE(take(a, 50), take(b, 50));
  EXPECT_EQ(take(c, 7), (std::vector<size_t>{0, 1, 2, 3, 4, 0, 1}));
  EXPECT_THROW(TrainingSampler(5, 1, 2, 2), Error);
  EXPECT_THROW(TrainingSampler(0, 1), Error);
}

TEST(InferenceSampler, ShardsCoverEveryIndexExactlyOnce) {
  for (size_t size : {0, 1, 7, 10, 13}) {
    for (int world : {1, 2, 3, 4, 8}) {
      std::vector<size_t> seen;
      size_t previous_end = 0;
      for (int rank = 0; rank < world; ++rank) {
        auto [begin, end] = InferenceSampler::shard(size, rank, world);
        EXPECT_EQ(begin, previous_end);  // contiguous, in rank order
        previous_end = end;
        InferenceSampler sampler(size, rank, world);
        while (auto i = sampler.next()) seen.push_back(*i);
      }
      std::vector<size_t> expected(size);
      std::iota(expected.begin(), expected.end(), 0);
      EXPECT_EQ(seen, expected) << size << " images, " << world << " ranks";
    }
  }
  // 10 over 4 ranks: 3, 3, 2, 2.
  EXPECT_EQ(InferenceSampler::shard(10, 1, 4), (std::pair<size_t, size_t>(3, 6)));
  EXPECT_EQ(InferenceSampler::shard(10, 3, 4), (std::pair<size_t, size_t>(8, 10)));
}

TEST(RepeatFactors, FromCategoryFrequencyByHand) {
  // 4 images; category 0 in images 0, 1, 2 (f = 0.75), category 1 in image 1 only (f = 0.25),
  // image 3 has none. Threshold 0.5: r(0) = max(1, sqrt(0.5 / 0.75)) = 1,
  // r(1) = sqrt(0.5 / 0.25) = sqrt(2). A repeated category counts once per image.
  const std::vector<std::vector<int>> categories = {{0}, {0, 1, 1}, {0, 0}, {}};
  EXPECT_EQ(repeat_factors_from_category_frequency(categories, 0.5),
            (std::vector<float>{1.f, static_cast<float>(std::sqrt(2.0)), 1.f, 1.f}));
  // Without sqrt: r(1) = 0.5 / 0.25 = 2.
  EXPECT_EQ(repeat_factors_from_category_frequency(categories, 0.5, false),
            (std::vector<float>{1.f, 2.f, 1.f, 1.f}));
}

TEST(RepeatFactorTrainingSampler, IsDetectron2sStreamForTheSeed) {
  // Python, generator seeded 7: torch.rand(3) = [0.5349, 0.1988, 0.6592] against fractional
  // parts [0, 0.5, 0.2247]: repeats [1, 2 + 1, 1] = indices [0, 1, 1, 1, 2], then
  // torch.randperm(5) orders them [1, 2, 1, 0, 1].
  RepeatFactorTrainingSampler sampler({1.0f, 2.5f, 1.2247449f}, 7);
  EXPECT_EQ(take(sampler, 5), (std::vector<size_t>{1, 2, 1, 0, 1}));
}

TEST(RepeatFactorTrainingSampler, IntegerFactorsRepeatExactly) {
  RepeatFactorTrainingSampler sampler({1.0f, 3.0f, 2.0f}, 3);
  std::vector<size_t> epoch = take(sampler, 6);
  std::sort(epoch.begin(), epoch.end());
  EXPECT_EQ(epoch, (std::vector<size_t>{0, 1, 1, 1, 2, 2}));
}

}  // namespace
}  // namespace detkit::data
