#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <cstdlib>

#include "detkit/utils/error.h"
#include "detkit/utils/threads.h"

namespace detkit {

TEST(Threads, ExplicitRequestWins) {
  EXPECT_EQ(configure_threads(1), 1);
  EXPECT_EQ(at::get_num_threads(), 1);
}

TEST(Threads, EnvironmentOverridesCoreCount) {
  setenv("DETKIT_NUM_THREADS", "2", 1);
  EXPECT_EQ(configure_threads(), 2);
  EXPECT_EQ(at::get_num_threads(), 2);
  setenv("DETKIT_NUM_THREADS", "many", 1);
  EXPECT_THROW(configure_threads(), Error);
  unsetenv("DETKIT_NUM_THREADS");
  EXPECT_GE(configure_threads(), 1);
}

}  // namespace detkit
