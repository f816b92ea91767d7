// GpuStepClock: inactive (no events, -1) off a GPU; on one, a step whose work the host queues
// after a pause shows more idle than one queued at once (skipped, saying why, where no GPU is
// visible).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <thread>

#include "detkit/utils/cuda_build.h"
#include "detkit/utils/gpu.h"

namespace detkit {
namespace {

TEST(GpuStepClock, InactiveOnTheCpu) {
  GpuStepClock clock(/*on_gpu=*/false);
  for (int step = 0; step < 3; ++step) {
    clock.step_begins();
    clock.step_ends();
  }
  synchronize_gpu();
  EXPECT_EQ(clock.idle_share(), -1);
}

TEST(GpuStepClock, ThePauseBeforeAStepIsIdle) {
  if (visible_gpu_count() == 0) GTEST_SKIP() << "no CUDA device visible";
  GpuStepClock clock(/*on_gpu=*/true);
  const at::Tensor a = at::randn({2048, 2048}, at::kCUDA);
  auto step = [&](std::chrono::milliseconds pause) {
    std::this_thread::sleep_for(pause);  // the host is busy elsewhere: the GPU has nothing
    clock.step_begins();
    for (int i = 0; i < 4; ++i) (void)at::mm(a, a);
    clock.step_ends();
    synchronize_gpu();
    return clock.idle_share();
  };
  step(std::chrono::milliseconds(0));
  const double paused = step(std::chrono::milliseconds(200));
  EXPECT_EQ(clock.idle_share(), -1);  // read once per step
  const double queued = step(std::chrono::milliseconds(0));
  std::cout << "[ gpu ] idle share after a 200 ms pause: " << paused << ", without: " << queued
            << "\n";
  EXPECT_GT(paused, queued);  // the pause, not a figure: timings are the machine's
  EXPECT_LE(paused, 1.0);
  EXPECT_GE(queued, 0.0);
}

}  // namespace
}  // namespace detkit
