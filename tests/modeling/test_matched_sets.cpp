// The matched-set comparison the parity tests use (tests/support/matched_sets.h): near-tied items
// may swap ranks, anything else must still fail.
#include <gtest/gtest.h>

#include "tests/support/matched_sets.h"

namespace detkit::testing {
namespace {

ScoredSet reference() {
  return {at::tensor({0.f, 0.f, 10.f, 10.f, 50.f, 50.f, 90.f, 90.f, 200.f, 0.f, 260.f, 40.f})
              .reshape({3, 4}),
          at::tensor({0.9f, 0.8f, 0.8000049f}), at::tensor({1, 2, 2}, at::kLong)};
}

TEST(MatchedSets, TiedItemsMaySwapRanks) {
  ScoredSet ours = reference();
  ours.boxes = ours.boxes.index_select(0, at::tensor({0, 2, 1}, at::kLong));
  ours.scores = ours.scores.index_select(0, at::tensor({0, 2, 1}, at::kLong));
  const SetMatch m = match_sets(ours, reference(), 1e-3, 1e-4);
  EXPECT_EQ(m.partner, (std::vector<int64_t>{0, 2, 1}));
  EXPECT_EQ(m.swapped, 2);
  EXPECT_EQ(m.unexplained, 0);
  EXPECT_TRUE(m.unmatched_reference.empty());
}

TEST(MatchedSets, MovedBoxWrongLabelOrScoreIsUnexplained) {
  for (int change = 0; change < 3; ++change) {
    ScoredSet ours = reference();
    if (change == 0) ours.boxes[0][0] = 5.f;  // a box 5 px away
    if (change == 1) ours.labels[0] = 7;      // another class
    if (change == 2) ours.scores[0] = 0.95f;  // a score 0.05 off
    const SetMatch m = match_sets(ours, reference(), 1e-3, 1e-4);
    EXPECT_EQ(m.unmatched_reference, (std::vector<int64_t>{0})) << change;
    EXPECT_EQ(m.unexplained, 2) << change << ": " << m.summary();
  }
}

TEST(MatchedSets, BoundaryTieMayDropOut) {
  // Our top-k cut kept a different item among the two tied lowest scores.
  ScoredSet ours = reference();
  ours.boxes[1] = at::tensor({300.f, 300.f, 310.f, 310.f});
  ours.scores[1] = 0.80001f;
  const SetMatch m = match_sets(ours, reference(), 1e-3, 1e-4);
  EXPECT_EQ(m.unmatched_reference.size(), 1u);
  EXPECT_EQ(m.unexplained, 0) << m.summary();
}

}  // namespace
}  // namespace detkit::testing
