// A save that fails or is killed half-way leaves the previous checkpoint and last_checkpoint
// intact: files appear only complete (temporary file, fsync, rename).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "detkit/checkpoint/checkpointer.h"
#include "detkit/checkpoint/torch_file.h"
#include "detkit/utils/error.h"
#include "detkit/utils/file_io.h"
#include "tests/support/temp_dir.h"

namespace detkit::checkpoint {
namespace {

namespace fs = std::filesystem;

// About 16 MB of weights: a save takes long enough to be interrupted.
std::shared_ptr<torch::nn::Module> big_net() {
  torch::manual_seed(0);
  return torch::nn::Linear(2000, 2000).ptr();
}

CheckpointState at_iteration(int64_t iteration) { return {{"iteration", iteration}}; }

std::vector<fs::path> temporary_files(const std::string& dir) {
  std::vector<fs::path> found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos)
      found.push_back(entry.path());
  return found;
}

// last_checkpoint names a complete file, and every .pth in the folder loads with all weights.
void expect_consistent(const std::string& dir, const torch::nn::Module& model) {
  Checkpointer checkpointer(big_net(), dir);
  const std::string last = checkpointer.last_checkpoint();
  ASSERT_TRUE(fs::exists(last)) << last;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".pth") continue;
    const TensorDict weights = model_weights_from(load_torch_file(entry.path()), entry.path());
    ASSERT_EQ(weights.size(), 2u) << entry.path();
    EXPECT_TRUE(weights.at("weight").equal(state_dict(model).at("weight"))) << entry.path();
  }
}

TEST(CheckpointAtomic, FailedSaveKeepsThePreviousCheckpoint) {
  testing::TempDir tmp("ckpt_fail");
  auto net = torch::nn::Linear(3, 2).ptr();
  Checkpointer checkpointer(net, tmp.path("out"));
  const std::string first = checkpointer.save("model_0000004", at_iteration(4));
  const std::string before = read_file(first);
  // The rename cannot replace a folder: the save fails after writing its temporary file.
  fs::create_directories(tmp.path("out/model_0000009.pth"));
  EXPECT_THROW(checkpointer.save("model_0000009", at_iteration(9)), Error);
  EXPECT_EQ(read_file(tmp.path("out/last_checkpoint")), "model_0000004.pth");
  EXPECT_EQ(read_file(first), before);
  EXPECT_TRUE(temporary_files(tmp.path("out")).empty());
  EXPECT_EQ(Checkpointer(net, tmp.path("out")).resume_or_load("", true).iteration(), 4);
}

TEST(CheckpointAtomic, KillDuringSaveLeavesOnlyCompleteCheckpoints) {
  testing::TempDir tmp("ckpt_kill");
  const std::string dir = tmp.path("out");
  auto net = big_net();
  Checkpointer(net, dir).save("model_0000000", at_iteration(0));
  int interrupted = 0;
  for (int round = 1; round <= 10 && interrupted < 2; ++round) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // saves until killed
      try {
        Checkpointer checkpointer(net, dir);
        for (int64_t i = 1;; ++i)
          checkpointer.save("model_" + std::to_string(1000000 * round + i), at_iteration(i));
      } catch (...) {
      }
      ::_exit(1);
    }
    // Kill the child as soon as a temporary file shows up (mid-write), or after 5 s.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (temporary_files(dir).empty() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the saving child exited by itself";
    const std::vector<fs::path> leftovers = temporary_files(dir);
    if (!leftovers.empty()) ++interrupted;  // killed before its rename
    expect_consistent(dir, *net);
    for (const fs::path& file : leftovers) fs::remove(file);
  }
  EXPECT_GE(interrupted, 2) << "no save was interrupted mid-write";
}

}  // namespace
}  // namespace detkit::checkpoint
