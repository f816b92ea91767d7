#include <gtest/gtest.h>

#include <torch/torch.h>

#include "detkit/checkpoint/state_dict.h"
#include "detkit/utils/error.h"
#include "tests/support/temp_dir.h"

namespace detkit::checkpoint {

namespace {
struct TinyImpl : torch::nn::Module {
  TinyImpl() {
    fc = register_module("fc", torch::nn::Linear(3, 2));
    bn = register_module("bn", torch::nn::BatchNorm1d(2));
  }
  torch::nn::Linear fc{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};
TORCH_MODULE(Tiny);
}  // namespace

TEST(StateDict, NamesParametersAndBuffers) {
  Tiny tiny;
  auto dict = state_dict(*tiny);
  std::vector<std::string> keys;
  for (const auto& [k, v] : dict) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"bn.bias", "bn.num_batches_tracked", "bn.running_mean",
                                            "bn.running_var", "bn.weight", "fc.bias", "fc.weight"}));
}

TEST(StateDict, LoadCopiesInPlaceAndReportsWhatDidNotFit) {
  Tiny tiny;
  at::Tensor weight_before = tiny->fc->weight;
  TensorDict dict = {{"model.fc.weight", torch::ones({2, 3})},
                     {"model.fc.bias", torch::ones({5})},          // wrong shape
                     {"model.extra", torch::ones({1})},            // unexpected
                     {"other.fc.weight", torch::ones({2, 3})}};    // outside the prefix
  auto report = load_state_dict(*tiny, dict, "model.");
  EXPECT_EQ(report.loaded, 1u);
  EXPECT_TRUE(tiny->fc->weight.equal(torch::ones({2, 3})));
  EXPECT_EQ(tiny->fc->weight.data_ptr(), weight_before.data_ptr());  // same storage
  ASSERT_EQ(report.mismatched.size(), 1u);
  EXPECT_NE(report.mismatched[0].find("fc.bias: checkpoint [5] vs model [2]"), std::string::npos)
      << report.mismatched[0];
  EXPECT_EQ(report.unexpected, (std::vector<std::string>{"model.extra", "other.fc.weight"}));
  EXPECT_EQ(report.missing.size(), 5u);  // fc.bias (mismatched is not loaded) and bn.*
  EXPECT_FALSE(report.complete());
  EXPECT_NE(report.summary().find("shape mismatch, not loaded (1)"), std::string::npos);
}

TEST(StateDict, PlainDictRoundTripAndBadFiles) {
  testing::TempDir tmp("state_dict");
  c10::Dict<std::string, at::Tensor> dict;
  dict.insert("a", torch::arange(4));
  dict.insert("b.c", torch::ones({2, 2}));
  auto bytes = torch::pickle_save(dict);
  auto path = tmp.write("w.pt", std::string(bytes.begin(), bytes.end()));
  auto loaded = load_plain_tensor_dict(path);
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_TRUE(loaded.at("a").equal(torch::arange(4)));
  EXPECT_THROW(load_plain_tensor_dict(tmp.write("junk.pt", "not a pickle")), Error);
  EXPECT_THROW(load_plain_tensor_dict(tmp.path("missing.pt")), Error);
}

}  // namespace detkit::checkpoint
