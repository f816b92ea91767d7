// Stop signals: the first is remembered, one that follows within a second is the same request,
// a later one exits at once (status 128 + signal) removing the temporary file being written.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "detkit/utils/file_io.h"
#include "detkit/utils/stop_signal.h"
#include "tests/support/temp_dir.h"

namespace detkit {
namespace {

TEST(StopSignal, TheFirstSignalIsRememberedAndARepeatWithinASecondIsTheSameRequest) {
  {
    StopSignalGuard guard;
    EXPECT_EQ(stop_requested(), 0);
    raise(SIGTERM);
    EXPECT_EQ(stop_requested(), SIGTERM);
    raise(SIGINT);  // a launcher passing the same request on: still here
    EXPECT_EQ(stop_requested(), SIGTERM);
  }
  EXPECT_EQ(stop_requested(), 0) << "the guard forgets the request when it goes";
}

TEST(StopSignal, ASecondSignalLaterExitsAtOnceAndRemovesTheTemporaryFile) {
  testing::TempDir dir("stop_signal");
  const std::string tmp = dir.path("model_0000003.pth.tmp.1");
  EXPECT_EXIT(
      {
        StopSignalGuard guard;
        raise(SIGTERM);
        atomic_write(tmp, "half a checkpoint");  // stands for a file being written
        internal::set_temporary_in_progress(tmp);
        std::this_thread::sleep_for(std::chrono::milliseconds(1100));
        raise(SIGTERM);
        std::this_thread::sleep_for(std::chrono::seconds(5));
        _exit(0);
      },
      ::testing::ExitedWithCode(128 + SIGTERM), "stop requested");
  EXPECT_FALSE(std::filesystem::exists(tmp));
}

TEST(StopSignal, SignalNames) {
  EXPECT_EQ(signal_name(SIGTERM), "SIGTERM");
  EXPECT_EQ(signal_name(SIGINT), "SIGINT");
  EXPECT_EQ(signal_name(SIGUSR1), "SIGUSR1");
}

}  // namespace
}  // namespace detkit
