// `detkit train` end to end on a tiny synthetic dataset: exact resume after kill -9 and after a
// SIGTERM stop, a full disk, the NaN stop, and the files a run leaves (config.yaml,
// metrics.json, checkpoints).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/checkpoint/torch_file.h"
#include "detkit/data/shapes/shapes.h"
#include "detkit/utils/file_io.h"
#include "detkit/utils/stop_signal.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_shapes.h"

namespace detkit::engine {
namespace fs = std::filesystem;

namespace {

using testing::TinySetup;

// Starts `detkit train` with the given extra arguments (files it writes limited to
// `max_file_bytes` when given, as `ulimit -f` does); returns the child's pid.
pid_t start_train(const TinySetup& s, const std::vector<std::string>& extra,
                  rlim_t max_file_bytes = RLIM_INFINITY) {
  std::vector<std::string> args = {DETKIT_BINARY, "--num-threads", "1",
                                   "train",       "--config-file", s.config};
  args.insert(args.end(), extra.begin(), extra.end());
  std::cout.flush();  // else the child prints what the parent buffered once more
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    if (max_file_bytes != RLIM_INFINITY) {
      rlimit limit{max_file_bytes, max_file_bytes};
      setrlimit(RLIMIT_FSIZE, &limit);
    }
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

// `args` followed by `extra`.
std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& extra) {
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Waits (at most 30 s) until `file` contains `text`.
bool wait_for_text(const std::string& file, const std::string& text) {
  for (int i = 0; i < 6000; ++i) {
    if (fs::exists(file) && read_file(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

std::vector<std::string> temporary_files(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos)
      found.push_back(entry.path().string());
  return found;
}

checkpoint::TensorDict model_of(const std::string& file) {
  c10::IValue v = checkpoint::load_torch_file(file);
  checkpoint::TensorDict out;
  for (const auto& item : v.toGenericDict().at("model").toGenericDict())
    out[item.key().toStringRef()] = item.value().toTensor();
  return out;
}

void expect_same_models(const std::string& a_file, const std::string& b_file) {
  auto a = model_of(a_file), b = model_of(b_file);
  ASSERT_EQ(a.size(), b.size());
  size_t differing = 0;
  for (const auto& [name, t] : a)
    if (!t.equal(b.at(name))) ++differing, ADD_FAILURE() << "differs after resume: " << name;
  std::cout << "[ resume ] " << a.size() << " tensors compared, " << differing << " differ\n";
}

// Makes `dir` an OUTPUT_DIR whose last_checkpoint is a copy of `from_dir`/`file`: what --resume
// there continues from.
void resume_from(const std::string& from_dir, const std::string& file, const std::string& dir) {
  fs::create_directories(dir);
  fs::copy_file(from_dir + "/" + file, dir + "/" + file);
  atomic_write(dir + "/last_checkpoint", file);
}

}  // namespace

TEST(TrainCli, ResumeAfterKillGivesIdenticalWeights) {
  TinySetup s;
  std::string straight = s.dir.path("straight"), resumed = s.dir.path("resumed");
  ASSERT_EQ(wait_exit(start_train(s, {"OUTPUT_DIR", straight})), 0)
      << read_file(s.dir.path("child.log"));

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

  expect_same_models(straight + "/model_final.pth", resumed + "/model_final.pth");
  auto a = model_of(straight + "/model_final.pth");
  EXPECT_TRUE(a.count("backbone.bottom_up.res2.0.conv1.weight"));
  EXPECT_TRUE(a.count("roi_heads.mask_head.predictor.weight"));
}

TEST(TrainCli, SigtermStopsAfterTheStepWithACheckpointAndResumesExactly) {
  TinySetup s;
  const std::string straight = s.dir.path("straight"), stopped = s.dir.path("stopped");
  ASSERT_EQ(wait_exit(start_train(s, {"OUTPUT_DIR", straight})), 0)
      << read_file(s.dir.path("child.log"));
  fs::remove(s.dir.path("child.log"));

  // SIGTERM as soon as training has started (what SLURM sends before its kill).
  const pid_t pid = start_train(s, {"OUTPUT_DIR", stopped});
  ASSERT_TRUE(wait_for_text(s.dir.path("child.log"), "Starting training from iteration 0"))
      << read_file(s.dir.path("child.log"));
  kill(pid, SIGTERM);
  const int code = wait_exit(pid);
  const std::string log = read_file(s.dir.path("child.log"));
  std::cout << "[ stopped ] exit code " << code << ": " << log.substr(log.rfind("detkit: "));
  ASSERT_EQ(code, kPreemptedExitCode) << log;
  ASSERT_FALSE(fs::exists(stopped + "/model_final.pth")) << "signalled too late to test stopping";
  const std::string last = read_file(stopped + "/last_checkpoint");
  const int64_t iteration = std::stoll(last.substr(6, 7));
  EXPECT_EQ(last, fmt::format("model_{:07d}.pth", iteration));
  EXPECT_NE(log.find(fmt::format("detkit: stopped: training stopped by SIGTERM after iteration {}, "
                                 "saved to {}/{}; run the same command with --resume",
                                 iteration, stopped, last)),
            std::string::npos)
      << log;
  EXPECT_TRUE(temporary_files(stopped).empty());
  EXPECT_NO_THROW(model_of(stopped + "/" + last));

  ASSERT_EQ(wait_exit(start_train(s, {"--resume", "OUTPUT_DIR", stopped})), 0)
      << read_file(s.dir.path("child.log"));
  EXPECT_NE(read_file(stopped + "/log.txt").find(fmt::format("at iteration {}", iteration + 1)),
            std::string::npos);
  expect_same_models(straight + "/model_final.pth", stopped + "/model_final.pth");
}

TEST(TrainCli, AFullDiskStopsNamingTheFileAndLeavesTheLastCheckpointValid) {
  TinySetup s;
  const std::string out = s.dir.path("full");
  ASSERT_EQ(wait_exit(start_train(s, {"OUTPUT_DIR", out, "SOLVER.MAX_ITER", "3"})), 0)
      << read_file(s.dir.path("child.log"));
  const auto checkpoint_size = fs::file_size(out + "/model_final.pth");
  fs::remove(s.dir.path("child.log"));
  // Going on to iteration 5 with files limited to half a checkpoint: its save must fail.
  const int code = wait_exit(
      start_train(s, {"--resume", "OUTPUT_DIR", out, "SOLVER.MAX_ITER", "6"}, checkpoint_size / 2));
  const std::string log = read_file(s.dir.path("child.log"));
  const std::string message = log.substr(log.rfind("detkit: "));
  std::cout << "[ full disk ] exit code " << code << ": " << message;
  EXPECT_EQ(code, 1);
  EXPECT_EQ(message.rfind("detkit: error: cannot write '" + out + "/model_0000005.pth'", 0), 0u)
      << message;
  EXPECT_NE(message.find("File too large (EFBIG)"), std::string::npos) << message;
  EXPECT_EQ(read_file(out + "/last_checkpoint"), "model_final.pth");
  EXPECT_NO_THROW(model_of(out + "/model_final.pth"));
  EXPECT_TRUE(temporary_files(out).empty());
  std::ifstream metrics(out + "/metrics.json");
  std::string line;
  while (std::getline(metrics, line)) EXPECT_NO_THROW(nlohmann::json::parse(line)) << line;
}

// A truncated training image: with DATALOADER.ON_BAD_IMAGE skip (the default) training goes on,
// the file is listed once in bad_images.txt and metrics.json counts the replaced samples; with
// "error" training stops naming the file and its annotation ids (Detectron2's behaviour).
TEST(TrainCli, ABadImageIsSkippedListedAndCountedOrStopsTraining) {
  TinySetup s;
  const std::string image = s.dir.path("datasets/shapes/train/000003.jpg");
  fs::resize_file(image, fs::file_size(image) / 2);
  const std::string out = s.dir.path("skip");
  ASSERT_EQ(wait_exit(start_train(s, {"OUTPUT_DIR", out})), 0)
      << read_file(s.dir.path("child.log"));
  const std::string listed = read_file(out + "/bad_images.txt");
  std::cout << "[ bad_images.txt ] " << listed;
  EXPECT_EQ(listed.rfind(image + ": ", 0), 0u) << listed;
  EXPECT_EQ(std::count(listed.begin(), listed.end(), '\n'), 1) << "the file is listed once";
  std::ifstream metrics(out + "/metrics.json");
  double counted = 0;
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j.contains("data/bad_images")) counted = j["data/bad_images"];
  }
  EXPECT_GE(counted, 1) << "metrics.json counts the replaced samples";

  fs::remove(s.dir.path("child.log"));
  const int code = wait_exit(
      start_train(s, {"OUTPUT_DIR", s.dir.path("error"), "DATALOADER.ON_BAD_IMAGE", "error"}));
  const std::string log = read_file(s.dir.path("child.log"));
  const std::string message = log.substr(log.rfind("detkit: "));
  std::cout << "[ error ] " << message;
  EXPECT_EQ(code, 1);
  EXPECT_NE(message.find(image + ": "), std::string::npos) << message;
  EXPECT_NE(message.find("(image id 3, annotation ids "), std::string::npos) << message;
}

TEST(TrainCli, RunLeavesConfigMetricsAndCheckpoints) {
  TinySetup s;
  std::string out = s.dir.path("run");
  // With the final evaluation on the two validation images, and Detectron2's training images
  // (ground truth | proposals) every 2 iterations in TensorBoard.
  ASSERT_EQ(wait_exit(start_train(s, {"OUTPUT_DIR", out, "DATASETS.TEST", "('shapes_val',)",
                                      "VIS_PERIOD", "2"})),
            0)
      << read_file(s.dir.path("child.log"));
  for (const char* f : {"config.yaml", "log.txt", "metrics.json", "model_0000002.pth",
                        "model_0000005.pth", "model_final.pth", "last_checkpoint"})
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  EXPECT_EQ(read_file(out + "/last_checkpoint"), "model_final.pth");
  std::ifstream metrics(out + "/metrics.json");
  std::string line;
  std::vector<nlohmann::json> lines;
  while (std::getline(metrics, line)) lines.push_back(nlohmann::json::parse(line));
  // The training line of the last iteration, then the final evaluation's (Detectron2's names).
  ASSERT_EQ(lines.size(), 2u);
  for (const char* key : {"iteration", "total_loss", "loss_cls", "loss_mask", "lr", "time"})
    EXPECT_TRUE(lines[0].contains(key)) << key << " missing in " << lines[0];
  EXPECT_EQ(lines[0]["iteration"], 5);
  for (const char* key : {"bbox/AP", "bbox/AP50", "segm/AP", "segm/AP75"})
    EXPECT_TRUE(lines[1].contains(key)) << key << " missing in " << lines[1];
  EXPECT_EQ(lines[1]["iteration"], 5);
  // The TensorBoard event file holds the same scalars, read back by an independent reader.
  if (std::string(DETKIT_ORACLE_PYTHON).empty()) {
    std::cout << "[ skipped ] TensorBoard read-back: no Python oracle\n";
    return;
  }
  const std::string reader = std::string(DETKIT_SOURCE_DIR) + "/tests/engine/read_tensorboard.py";
  EXPECT_EQ(std::system((std::string(DETKIT_ORACLE_PYTHON) + " " + reader + " " + out + " 2 6").c_str()),
            0);
}

TEST(TrainCli, NonFiniteLossStopsWithTheIterationNamed) {
  TinySetup s;
  std::string out = s.dir.path("nan");
  int code =
      wait_exit(start_train(s, {"OUTPUT_DIR", out, "SOLVER.BASE_LR", "1e12", "SOLVER.WARMUP_ITERS",
                                "0", "SOLVER.CHECKPOINT_PERIOD", "1"}));
  std::string log = read_file(s.dir.path("child.log"));
  EXPECT_NE(code, 0) << log;
  EXPECT_NE(log.find("detkit: error: iteration "), std::string::npos) << log;
  // The report names the learning rate and the batch's images (what diverged first depends on
  // the run: a loss, or the proposals' boxes as Detectron2 checks them).
  const std::string message = log.substr(log.rfind("detkit: error: "));
  std::cout << "[ divergence ] " << message;
  EXPECT_NE(message.find("; lr "), std::string::npos) << message;
  EXPECT_NE(message.find("; this rank's images: " + s.dir.path("datasets/shapes/train/")),
            std::string::npos)
      << message;
  // The anomaly pass ran the batch again and named where the first non-finite value appeared:
  // an op with its module, or parameters that already were.
  EXPECT_NE(message.find("; anomaly pass: "), std::string::npos) << message;
  EXPECT_TRUE(message.find("run again: aten::") != std::string::npos ||
              message.find("already non-finite: ") != std::string::npos)
      << message;
  EXPECT_NE(message.find(" module "), std::string::npos) << message;
  // Every checkpoint written before the stop loads.
  ASSERT_TRUE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.path().extension() == ".pth") EXPECT_NO_THROW(model_of(entry.path().string()));
}

}  // namespace detkit::engine

namespace detkit::engine {

TEST(TrainCli, MixedPrecisionSavesItsScalerAndResumesExactly) {
  TinySetup s;
  const std::string straight = s.dir.path("amp"), resumed = s.dir.path("amp_resumed");
  // With the final evaluation on the two validation images, which runs under autocast too.
  const std::vector<std::string> amp = {"SOLVER.AMP.ENABLED", "True", "DATASETS.TEST",
                                        "('shapes_val',)"};
  ASSERT_EQ(wait_exit(start_train(s, with({"OUTPUT_DIR", straight}, amp))), 0)
      << read_file(s.dir.path("child.log"));
  // The scaler in PyTorch's GradScaler.state_dict() layout: 3 clean steps after iteration 2.
  const auto scaler = [](const std::string& file) {
    return checkpoint::load_torch_file(file).toGenericDict().at("grad_scaler").toGenericDict();
  };
  EXPECT_EQ(scaler(straight + "/model_0000002.pth").at(std::string("scale")).toDouble(), 65536.0);
  EXPECT_EQ(scaler(straight + "/model_0000002.pth").at(std::string("_growth_tracker")).toInt(), 3);
  EXPECT_EQ(scaler(straight + "/model_final.pth").at(std::string("_growth_tracker")).toInt(), 6);
  std::ifstream metrics(straight + "/metrics.json");
  bool evaluated = false;
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    evaluated |= j.contains("segm/AP");
    if (!j.contains("total_loss")) continue;
    EXPECT_EQ(j.value("[metric]grad_scaler", 0.0), 65536.0) << line;
    EXPECT_EQ(j.value("amp/skipped_steps", -1.0), 0.0) << line;
  }
  EXPECT_TRUE(evaluated) << "no evaluation in " << straight << "/metrics.json";

  // Resume from the iteration-2 checkpoint: the same final weights as the uninterrupted run.
  resume_from(straight, "model_0000002.pth", resumed);
  ASSERT_EQ(wait_exit(start_train(s, with({"--resume", "OUTPUT_DIR", resumed}, amp))), 0)
      << read_file(s.dir.path("child.log"));
  expect_same_models(straight + "/model_final.pth", resumed + "/model_final.pth");
  EXPECT_EQ(scaler(resumed + "/model_final.pth").at(std::string("_growth_tracker")).toInt(), 6);

  // The same checkpoint resumed without AMP continues in fp32 (the scaler entry is not needed),
  // and an fp32 checkpoint resumed with AMP starts a fresh scale, saying so.
  const std::string fp32 = s.dir.path("amp_to_fp32");
  resume_from(straight, "model_0000002.pth", fp32);
  ASSERT_EQ(wait_exit(start_train(s, {"--resume", "OUTPUT_DIR", fp32})), 0)
      << read_file(s.dir.path("child.log"));
  EXPECT_FALSE(checkpoint::load_torch_file(fp32 + "/model_final.pth")
                   .toGenericDict()
                   .contains(std::string("grad_scaler")));
  const std::string again = s.dir.path("fp32_to_amp");
  resume_from(fp32, "model_0000005.pth", again);
  ASSERT_EQ(
      wait_exit(start_train(s, with({"--resume", "OUTPUT_DIR", again, "SOLVER.MAX_ITER", "8"}, amp))),
      0)
      << read_file(s.dir.path("child.log"));
  EXPECT_EQ(scaler(again + "/model_final.pth").at(std::string("_growth_tracker")).toInt(), 2);
  EXPECT_NE(read_file(s.dir.path("child.log")).find("has no grad_scaler"), std::string::npos);
}

TEST(TrainCli, MixedPrecisionO2WithAStaticScaleSavesFp32MastersAndResumesExactly) {
  TinySetup s;
  const std::string straight = s.dir.path("o2"), resumed = s.dir.path("o2_resumed");
  // With the seed port's static loss scale (O1's run above has the dynamic one).
  const std::vector<std::string> o2 = {"SOLVER.AMP.ENABLED", "True", "SOLVER.AMP.OPT_LEVEL", "O2",
                                       "SOLVER.AMP.LOSS_SCALE", "64"};
  // Its final evaluation runs on the model as trained: bfloat16 weights, under autocast.
  ASSERT_EQ(wait_exit(start_train(s, with({"OUTPUT_DIR", straight, "DATASETS.TEST",
                                           "('shapes_val',)"},
                                          o2))),
            0)
      << read_file(s.dir.path("child.log"));
  EXPECT_NE(read_file(straight + "/metrics.json").find("segm/AP"), std::string::npos);
  EXPECT_EQ(checkpoint::load_torch_file(straight + "/model_final.pth")
                .toGenericDict()
                .at("grad_scaler")
                .toGenericDict()
                .at(std::string("scale"))
                .toDouble(),
            64.0);
  // The checkpoints hold fp32 weights, and the trained ones (those that changed after
  // iteration 2) are the masters, not the model's bfloat16 tensors widened: they hold values
  // bfloat16 cannot.
  const auto at_2 = model_of(straight + "/model_0000002.pth");
  size_t trained = 0, masters = 0;
  for (const auto& [name, t] : model_of(straight + "/model_final.pth")) {
    EXPECT_EQ(t.scalar_type(), at::kFloat) << name;
    if (t.equal(at_2.at(name))) continue;
    ++trained;
    masters += !t.to(at::kBFloat16).to(at::kFloat).equal(t);
  }
  std::cout << "[ o2 ] trained tensors " << trained << ", holding values bfloat16 cannot " << masters
            << "\n";
  EXPECT_GT(trained, 10u);
  EXPECT_EQ(masters, trained);

  resume_from(straight, "model_0000002.pth", resumed);
  ASSERT_EQ(wait_exit(start_train(s, with({"--resume", "OUTPUT_DIR", resumed}, o2))), 0)
      << read_file(s.dir.path("child.log"));
  expect_same_models(straight + "/model_final.pth", resumed + "/model_final.pth");

  // An O2 checkpoint is an fp32 one: it evaluates without SOLVER.AMP.
  ASSERT_EQ(wait_exit(start_train(s, {"--eval-only", "MODEL.WEIGHTS", straight + "/model_final.pth",
                                      "OUTPUT_DIR", s.dir.path("o2_eval"), "DATASETS.TEST",
                                      "('shapes_val',)"})),
            0)
      << read_file(s.dir.path("child.log"));
}

TEST(TrainCli, ValidationLossIsRecordedAndChangesNothingOfTraining) {
  TinySetup s;
  const std::string plain = s.dir.path("plain"), validated = s.dir.path("validated");
  const std::vector<std::string> test_set = {"DATASETS.TEST", "('shapes_val',)"};
  ASSERT_EQ(wait_exit(start_train(s, with({"OUTPUT_DIR", plain}, test_set))), 0)
      << read_file(s.dir.path("child.log"));
  ASSERT_EQ(wait_exit(start_train(
                s, with({"OUTPUT_DIR", validated, "TEST.VAL_LOSS_PERIOD", "3"}, test_set))),
            0)
      << read_file(s.dir.path("child.log"));
  // No gradient, buffers put back, the generator restored: the same weights as without it.
  expect_same_models(plain + "/model_final.pth", validated + "/model_final.pth");
  std::ifstream metrics(validated + "/metrics.json");
  bool found = false;
  for (std::string line; std::getline(metrics, line);) {
    const auto j = nlohmann::json::parse(line);
    if (!j.contains("validation/total_loss")) continue;
    found = true;
    EXPECT_EQ(j["iteration"], 5);
    double sum = 0;
    for (const char* key : {"validation/loss_cls", "validation/loss_box_reg", "validation/loss_mask",
                            "validation/loss_rpn_cls", "validation/loss_rpn_loc"}) {
      ASSERT_TRUE(j.contains(key)) << key << " missing in " << line;
      sum += j[key].get<double>();
    }
    EXPECT_NEAR(j["validation/total_loss"].get<double>(), sum, 1e-6 * sum);
    std::cout << "[ validation ] " << line << "\n";
  }
  EXPECT_TRUE(found) << read_file(validated + "/metrics.json");
}

}  // namespace detkit::engine
