// Rank awareness: one process is rank 0 of a world of one; an installed communicator changes what
// every caller sees and is put back; an impossible topology is refused with the field named.
#include "detkit/distributed/comm.h"

#include <gtest/gtest.h>

#include "detkit/utils/error.h"
#include "tests/support/scoped_rank.h"

namespace detkit::distributed {
namespace {

TEST(Comm, AProcessStartsAsTheOnlyRank) {
  EXPECT_EQ(get_rank(), 0);
  EXPECT_EQ(get_world_size(), 1);
  EXPECT_EQ(get_local_rank(), 0);
  EXPECT_EQ(get_local_size(), 1);
  EXPECT_TRUE(is_main_process());
  synchronize();  // nothing to wait for
}

TEST(Comm, AnInstalledCommunicatorIsWhatCallersSeeUntilItIsPutBack) {
  {
    testing::ScopedRank rank(1, 4);
    EXPECT_EQ(get_rank(), 1);
    EXPECT_EQ(get_world_size(), 4);
    EXPECT_FALSE(is_main_process());
    synchronize();
    synchronize();
    EXPECT_EQ(rank.barriers(), 2);
  }
  EXPECT_EQ(get_rank(), 0);
  EXPECT_EQ(get_world_size(), 1);
}

TEST(Comm, OneRankNeverCallsTheBarrier) {
  testing::ScopedRank rank(0, 1);
  synchronize();
  EXPECT_EQ(rank.barriers(), 0);
}

void expect_refused(const Topology& t, const std::string& what) {
  try {
    check_topology(t);
    ADD_FAILURE() << "accepted rank " << t.rank << " of " << t.world_size;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(Comm, AnImpossibleTopologyIsRefusedWithTheFieldNamed) {
  expect_refused({0, 0, 0, 1}, "world size must be at least 1, got 0");
  expect_refused({2, 2, 0, 1}, "rank 2 is outside a world of 2");
  expect_refused({-1, 2, 0, 1}, "rank -1 is outside a world of 2");
  expect_refused({1, 4, 1, 3}, "rank 1: local world size 3 does not divide the world size 4");
  expect_refused({1, 4, 2, 2}, "rank 1: local rank 2 is outside a local world of 2");
  EXPECT_NO_THROW(check_topology({5, 8, 1, 4}));
  // install() checks before it changes anything.
  struct Bad : SingleProcess {
    const Topology& topology() const override { return t; }
    Topology t{3, 2, 0, 1};
  };
  EXPECT_THROW(install(std::make_shared<Bad>()), Error);
  EXPECT_EQ(get_world_size(), 1);
}

}  // namespace
}  // namespace detkit::distributed
