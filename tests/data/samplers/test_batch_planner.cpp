// BatchPlanner: batches planned on image sizes alone — grouping by aspect ratio in stream order,
// stream positions from the planner's first position and stride, the samples left waiting.
#include <gtest/gtest.h>

#include <vector>

#include "detkit/data/samplers/batch_planner.h"
#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

// Indices 0, 1, 2, ... then nothing.
class Counting : public Sampler {
 public:
  explicit Counting(size_t end) : end_(end) {}
  std::optional<size_t> next() override {
    if (next_ == end_) return std::nullopt;
    return next_++;
  }

 private:
  size_t next_ = 0, end_;
};

std::vector<size_t> indices(const std::vector<StreamSample>& batch) {
  std::vector<size_t> out;
  for (const auto& s : batch) out.push_back(s.index);
  return out;
}

TEST(BatchPlanner, GroupsByAspectRatioInStreamOrder) {
  Counting sampler(100);
  // Odd indices wide, even ones tall.
  BatchPlanner planner(sampler, 3, [](size_t i) { return static_cast<int>(i % 2); }, 1, 2);
  const std::vector<StreamSample> first = planner.next();
  EXPECT_EQ(indices(first), (std::vector<size_t>{0, 2, 4}));
  // The k-th sample drawn sits at stream position 1 + 2k (this rank's shard of 2).
  EXPECT_EQ(first[0].position, 1u);
  EXPECT_EQ(first[2].position, 9u);
  EXPECT_EQ(planner.drawn(), 5u);
  EXPECT_EQ(planner.waiting(), 2u);  // 1 and 3 wait for a third wide image
  EXPECT_EQ(indices(planner.next()), (std::vector<size_t>{1, 3, 5}));
  EXPECT_EQ(planner.waiting(), 0u);
  EXPECT_EQ(BatchPlanner::bucket_of(10, 20), 0);
  EXPECT_EQ(BatchPlanner::bucket_of(20, 20), 1);
}

TEST(BatchPlanner, WithoutGroupingTakesTheNextSamplesAndSaysWhenTheStreamEnds) {
  Counting sampler(5);
  BatchPlanner planner(sampler, 2, nullptr);
  EXPECT_EQ(indices(planner.next()), (std::vector<size_t>{0, 1}));
  EXPECT_EQ(indices(planner.next()), (std::vector<size_t>{2, 3}));
  EXPECT_THROW(planner.next(), Error);
  EXPECT_THROW(BatchPlanner(sampler, 0, nullptr), Error);
}

}  // namespace
}  // namespace detkit::data
