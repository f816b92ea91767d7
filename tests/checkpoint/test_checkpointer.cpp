// Checkpointer: Detectron2's file names and last_checkpoint, resume vs MODEL.WEIGHTS, keeping
// the newest K periodic files.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "detkit/checkpoint/checkpointer.h"
#include "detkit/checkpoint/periodic_checkpointer.h"
#include "detkit/checkpoint/torch_file.h"
#include "detkit/utils/error.h"
#include "tests/checkpoint/checkpoint_oracle.h"

namespace detkit::checkpoint {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<torch::nn::Module> tiny_net(int64_t seed) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(3, 2), torch::nn::BatchNorm1d(2)).ptr();
}

bool same_weights(const torch::nn::Module& a, const torch::nn::Module& b) {
  const TensorDict x = state_dict(a), y = state_dict(b);
  if (x.size() != y.size()) return false;
  for (const auto& [name, tensor] : x)
    if (!y.count(name) || !tensor.equal(y.at(name))) return false;
  return true;
}

CheckpointState trainer_state(int64_t iteration) {
  c10::impl::GenericDict optimizer = make_dict();
  optimizer.insert("momentum", 0.9);
  return {{"optimizer", optimizer}, {"iteration", iteration}};
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Checkpointer, SaveWritesModelStateAndLastCheckpoint) {
  testing::TempDir tmp("ckpt_save");
  auto net = tiny_net(1);
  Checkpointer checkpointer(net, tmp.path("out"));
  EXPECT_FALSE(checkpointer.has_checkpoint());
  EXPECT_EQ(checkpointer.last_checkpoint(), "");
  const std::string path = checkpointer.save("model_0000099", trainer_state(99));
  EXPECT_EQ(path, tmp.path("out/model_0000099.pth"));
  EXPECT_EQ(read_file(tmp.path("out/last_checkpoint")), "model_0000099.pth");
  EXPECT_EQ(checkpointer.last_checkpoint(), path);
  auto root = load_torch_file(path).toGenericDict();
  std::vector<std::string> keys;
  for (const auto& entry : root) keys.push_back(entry.key().toStringRef());
  EXPECT_EQ(keys, (std::vector<std::string>{"model", "iteration", "optimizer"}));
  EXPECT_EQ(root.at(c10::IValue("iteration")).toInt(), 99);
  EXPECT_EQ(model_weights_from(root, path).size(), state_dict(*net).size());
  EXPECT_EQ(files_in(tmp.path("out")),
            (std::vector<std::string>{"last_checkpoint", "model_0000099.pth"}));
  try {
    checkpointer.save("bad", {{"model", int64_t{1}}});
    ADD_FAILURE() << "a 'model' entry that is not a dict of tensors was saved";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'model' entry must be a dict of tensors"),
              std::string::npos)
        << e.what();
  }
  Checkpointer other_rank(net, tmp.path("rank1"), /*save_to_disk=*/false);
  EXPECT_EQ(other_rank.save("model_0000099"), "");
  EXPECT_FALSE(fs::exists(tmp.path("rank1")));
}

TEST(Checkpointer, AModelEntryInTheStateReplacesThoseModelTensors) {
  // Mixed precision's O2: the file holds the fp32 masters in place of the bf16 weights.
  testing::TempDir tmp("ckpt_masters");
  auto net = tiny_net(1);
  const TensorDict own = state_dict(*net);
  const at::Tensor master = at::full({2, 3}, 0.125f);
  c10::Dict<std::string, at::Tensor> masters;
  masters.insert("0.weight", master);
  CheckpointState state = trainer_state(3);
  state["model"] = masters;
  Checkpointer checkpointer(net, tmp.path("out"));
  const auto saved = model_weights_from(load_torch_file(checkpointer.save("m", state)), "m");
  EXPECT_TRUE(saved.at("0.weight").equal(master));
  EXPECT_TRUE(saved.at("0.bias").equal(own.at("0.bias")));
  EXPECT_EQ(saved.size(), own.size());
  for (const auto& [name, shape] : {std::pair{"0.nothing", std::vector<int64_t>{2, 3}},
                                    {"0.weight", std::vector<int64_t>{3, 2}}}) {
    c10::Dict<std::string, at::Tensor> wrong;
    wrong.insert(name, at::zeros(shape));
    state["model"] = wrong;
    try {
      checkpointer.save("bad", state);
      ADD_FAILURE() << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("replaces '" + std::string(name) +
                                           "', which is not a model tensor of that shape"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Checkpointer, ResumeLoadsModelAndReturnsTrainerState) {
  testing::TempDir tmp("ckpt_resume");
  auto trained = tiny_net(1);
  Checkpointer(trained, tmp.path("out")).save("model_0000041", trainer_state(41));
  auto fresh = tiny_net(2);
  ASSERT_FALSE(same_weights(*fresh, *trained));
  Checkpointer checkpointer(fresh, tmp.path("out"));
  LoadedCheckpoint loaded = checkpointer.resume_or_load("ignored.pth", /*resume=*/true);
  EXPECT_TRUE(loaded.resumed);
  EXPECT_EQ(loaded.path, tmp.path("out/model_0000041.pth"));
  EXPECT_TRUE(loaded.report.complete()) << loaded.report.summary();
  EXPECT_TRUE(same_weights(*fresh, *trained));
  EXPECT_EQ(loaded.iteration(), 41);
  EXPECT_FALSE(loaded.state.count("model"));
  EXPECT_DOUBLE_EQ(
      loaded.state.at("optimizer").toGenericDict().at(c10::IValue("momentum")).toDouble(), 0.9);
}

TEST(Checkpointer, WithoutResumeLoadsWeightsOnly) {
  testing::TempDir tmp("ckpt_weights");
  auto trained = tiny_net(1);
  const std::string weights =
      Checkpointer(trained, tmp.path("trained")).save("model_final", trainer_state(9));
  auto other = tiny_net(3);
  Checkpointer(other, tmp.path("out")).save("model_0000004", trainer_state(4));
  auto fresh = tiny_net(2);
  Checkpointer checkpointer(fresh, tmp.path("out"));
  LoadedCheckpoint loaded = checkpointer.resume_or_load(weights, /*resume=*/false);
  EXPECT_FALSE(loaded.resumed);
  EXPECT_EQ(loaded.path, weights);
  EXPECT_TRUE(same_weights(*fresh, *trained));
  EXPECT_EQ(loaded.state.size(), 0u);
  EXPECT_EQ(loaded.iteration(), -1);
  // Resume without a last_checkpoint falls back to MODEL.WEIGHTS; "" loads nothing.
  Checkpointer empty_dir(fresh, tmp.path("empty"));
  EXPECT_EQ(empty_dir.resume_or_load(weights, /*resume=*/true).path, weights);
  EXPECT_EQ(empty_dir.resume_or_load("", /*resume=*/true).path, "");
}

TEST(Checkpointer, LoadsPythonCheckpointsNestedOrFlat) {
  DETKIT_REQUIRE_PYTHON_FIXTURES();
  for (const char* file : {"nested.pth", "ordered.pth"}) {
    auto net = tiny_net(1);
    Checkpointer checkpointer(net, "unused");
    const std::string path = testing::PythonFixtures::get().file(file);
    LoadedCheckpoint loaded = checkpointer.load(path, /*with_state=*/true);
    EXPECT_TRUE(loaded.report.complete()) << file << ": " << loaded.report.summary();
    const TensorDict weights = state_dict(*net);
    EXPECT_TRUE(weights.at("1.running_var").equal(torch::tensor({5.0f, 6.0f}))) << file;
    EXPECT_EQ(weights.at("1.num_batches_tracked").item<int64_t>(), 6) << file;
  }
}

TEST(Checkpointer, ModelWeightsStripModulePrefixAndSkipMismatchedShapes) {
  auto net = tiny_net(1);
  const at::Tensor bias_before = state_dict(*net).at("0.bias").clone();
  TensorDict weights = {{"module.0.weight", torch::ones({2, 3})},
                        {"module.0.bias", torch::ones({7})},
                        {"module.pixel_mean", torch::ones({3})}};
  LoadReport report = load_model_weights(*net, weights, "ddp.pth");
  EXPECT_EQ(report.loaded, 1u);
  EXPECT_TRUE(state_dict(*net).at("0.weight").equal(torch::ones({2, 3})));
  EXPECT_TRUE(state_dict(*net).at("0.bias").equal(bias_before));
  ASSERT_EQ(report.mismatched.size(), 1u);
  EXPECT_TRUE(report.unexpected.empty());  // pixel_mean: ignored, as Detectron2 does
  EXPECT_EQ(report.missing.size(), 5u);    // 1.*; the mismatched 0.bias is reported as such
}

TEST(PeriodicCheckpointer, KeepsTheNewestKAndTheFinalModel) {
  testing::TempDir tmp("ckpt_periodic");
  auto net = tiny_net(1);
  Checkpointer checkpointer(net, tmp.path("out"));
  PeriodicCheckpointer periodic(checkpointer, /*period=*/2, /*max_iter=*/11, /*max_to_keep=*/2);
  for (int64_t iteration = 0; iteration < 11; ++iteration) periodic.step(iteration, {});
  EXPECT_EQ(files_in(tmp.path("out")),
            (std::vector<std::string>{"last_checkpoint", "model_0000007.pth", "model_0000009.pth",
                                      "model_final.pth"}));
  EXPECT_EQ(read_file(tmp.path("out/last_checkpoint")), "model_final.pth");
  EXPECT_EQ(load_torch_file(tmp.path("out/model_0000009.pth"))
                .toGenericDict()
                .at(c10::IValue("iteration"))
                .toInt(),
            9);
}

TEST(PeriodicCheckpointer, NeverDeletesTheFileLastCheckpointNames) {
  testing::TempDir tmp("ckpt_keep_last");
  auto net = tiny_net(1);
  Checkpointer checkpointer(net, tmp.path("out"));
  PeriodicCheckpointer periodic(checkpointer, /*period=*/1, /*max_iter=*/100, /*max_to_keep=*/1);
  periodic.step(0, {});
  periodic.step(1, {});
  EXPECT_EQ(files_in(tmp.path("out")),
            (std::vector<std::string>{"last_checkpoint", "model_0000001.pth"}));
  // An older checkpoint that last_checkpoint names (a user resuming from it) stays.
  tmp.write("out/model_0000000.pth", read_file(tmp.path("out/model_0000001.pth")));
  tmp.write("out/last_checkpoint", "model_0000000.pth");
  tmp.write("out/model_0000000.pth.notes", "kept");
  periodic.remove_stale();
  EXPECT_EQ(files_in(tmp.path("out")),
            (std::vector<std::string>{"last_checkpoint", "model_0000000.pth",
                                      "model_0000000.pth.notes", "model_0000001.pth"}));
}

}  // namespace
}  // namespace detkit::checkpoint
