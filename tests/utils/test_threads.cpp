#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include <cstdlib>
#include <iostream>
#include <thread>

#include "detkit/utils/error.h"
#include "detkit/utils/threads.h"

namespace detkit {

TEST(Threads, DetkitsOwnParallelLoopsRunOnTheTeam) {
  // GCC builds detkit with -fopenmp: libtorch's inline at::parallel_for splits work in detkit's
  // files (ROIAlign, mask pasting, NMS, SGD); without it every one of them ran on one thread.
  configure_threads(2);
  const int threads = parallel_for_threads(64);
  std::cout << "at::parallel_for from detkit's code on a team of 2: " << threads << " thread(s)\n";
#if defined(__GNUC__) && !defined(__clang__)
  EXPECT_EQ(threads, 2);
#else
  EXPECT_EQ(threads, 1);  // clang builds (the libFuzzer one) stay without OpenMP
#endif
  configure_threads(1);
  EXPECT_EQ(parallel_for_threads(64), 1);
}

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

// A helper thread's ops run on that thread alone; the others keep their count.
TEST(Threads, AHelperThreadRunsItsOpsOnOneThread) {
  configure_threads(2);
  int in_helper = 0;
  std::thread helper([&] {
    use_one_thread_for_ops_in_this_thread();
    at::parallel_for(0, 1 << 20, 1, [&](int64_t, int64_t) {});  // a first parallel op
    in_helper = at::get_num_threads();
  });
  helper.join();
  EXPECT_EQ(in_helper, 1);
  EXPECT_EQ(at::get_num_threads(), 2);
  int in_other = 0;
  std::thread other([&] { in_other = at::get_num_threads(); });
  other.join();
  EXPECT_EQ(in_other, 2);
}

}  // namespace detkit
