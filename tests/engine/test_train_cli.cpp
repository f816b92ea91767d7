// `detkit train` end to end on a tiny synthetic dataset: exact resume after kill -9, the NaN
// stop, and the files a run leaves (config.yaml, metrics.json, checkpoints).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/checkpoint/torch_file.h"
#include "detkit/data/shapes/shapes.h"
#include "detkit/utils/file_io.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_shapes.h"

namespace detkit::engine {
namespace fs = std::filesystem;

namespace {

using testing::TinySetup;

// Starts `detkit train` with the given extra arguments; returns the child's pid.
pid_t start_train(const TinySetup& s, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {DETKIT_BINARY, "--num-threads", "1", "train",
                                   "--config-file", s.config};
  args.insert(args.end(), extra.begin(), extra.end());
  pid_t pid = fork();
  if (pid == 0) {
    setenv("DETKIT_DATASETS", s.dir.path("datasets").c_str(), 1);
    std::string log = s.dir.path("child.log");
    freopen(log.c_str(), "a", stdout);
    freopen(log.c_str(), "a", stderr);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

checkpoint::TensorDict model_of(const std::string& file) {
  c10::IValue v = checkpoint::load_torch_file(file);
  checkpoint::TensorDict out;
  for (const auto& item : v.toGenericDict().at("model").toGenericDict())
    out[item.key().toStringRef()] = item.value().toTensor();
  return out;
}

}  // namespace

TEST(TrainCli, ResumeAfterKillGivesIdenticalWeights) {
  TinySetup s;
  std::string straight = s.dir.path("straight"), resumed = s.dir.path("resumed");
  ASSERT_EQ(wait_exit(start_train(s, {"OUTPUT_DIR", straight})), 0) << read_file(s.dir.path("child.log"));

  // Kill -9 once the first checkpoint (after iteration 2) exists, then resume.
  pid_t pid = start_train(s, {"OUTPUT_DIR", resumed});
  const std::string tag = resumed + "/last_checkpoint";
  auto saved = [&] { return fs::exists(tag) && read_file(tag) == "model_0000002.pth"; };
  for (int i = 0; i < 6000 && !saved(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(saved()) << read_file(s.dir.path("child.log"));
  kill(pid, SIGKILL);
  wait_exit(pid);
  ASSERT_FALSE(fs::exists(resumed + "/model_final.pth")) << "killed too late to test resuming";
  ASSERT_EQ(wait_exit(start_train(s, {"--resume", "OUTPUT_DIR", resumed})), 0)
      << read_file(s.dir.path("child.log"));
  EXPECT_NE(read_file(s.dir.path("child.log")).find("Resuming from"), std::string::npos)
      << read_file(s.dir.path("child.log"));

  auto a = model_of(straight + "/model_final.pth"), b = model_of(resumed + "/model_final.pth");
  ASSERT_EQ(a.size(), b.size());
  size_t differing = 0;
  for (const auto& [name, t] : a)
    if (!t.equal(b.at(name))) ++differing, ADD_FAILURE() << "differs after resume: " << name;
  std::cout << "[ resume ] " << a.size() << " tensors compared, " << differing << " differ\n";
  EXPECT_TRUE(a.count("backbone.bottom_up.res2.0.conv1.weight"));
  EXPECT_TRUE(a.count("roi_heads.mask_head.predictor.weight"));
}

TEST(TrainCli, RunLeavesConfigMetricsAndCheckpoints) {
  TinySetup s;
  std::string out = s.dir.path("run");
  ASSERT_EQ(wait_exit(start_train(s, {"OUTPUT_DIR", out})), 0) << read_file(s.dir.path("child.log"));
  for (const char* f : {"config.yaml", "log.txt", "metrics.json", "model_0000002.pth",
                        "model_0000005.pth", "model_final.pth", "last_checkpoint"})
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  EXPECT_EQ(read_file(out + "/last_checkpoint"), "model_final.pth");
  std::ifstream metrics(out + "/metrics.json");
  std::string line;
  int64_t last_iteration = -1;
  while (std::getline(metrics, line)) {
    auto j = nlohmann::json::parse(line);
    for (const char* key : {"iteration", "total_loss", "loss_cls", "loss_mask", "lr", "time"})
      EXPECT_TRUE(j.contains(key)) << key << " missing in " << line;
    last_iteration = j["iteration"];
  }
  EXPECT_EQ(last_iteration, 5);
}

TEST(TrainCli, NonFiniteLossStopsWithTheIterationNamed) {
  TinySetup s;
  std::string out = s.dir.path("nan");
  int code = wait_exit(start_train(s, {"OUTPUT_DIR", out, "SOLVER.BASE_LR", "1e12",
                                       "SOLVER.WARMUP_ITERS", "0", "SOLVER.CHECKPOINT_PERIOD", "1"}));
  std::string log = read_file(s.dir.path("child.log"));
  EXPECT_NE(code, 0) << log;
  EXPECT_NE(log.find("detkit: error: iteration "), std::string::npos) << log;
  // Every checkpoint written before the stop loads.
  ASSERT_TRUE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.path().extension() == ".pth") EXPECT_NO_THROW(model_of(entry.path().string()));
}

}  // namespace detkit::engine
