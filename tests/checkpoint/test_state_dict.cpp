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
  EXPECT_EQ(keys,
            (std::vector<std::string>{"bn.bias", "bn.num_batches_tracked", "bn.running_mean",
                                      "bn.running_var", "bn.weight", "fc.bias", "fc.weight"}));
}

TEST(StateDict, LoadCopiesInPlaceAndReportsWhatDidNotFit) {
  Tiny tiny;
  at::Tensor weight_before = tiny->fc->weight;
  TensorDict dict = {{"model.fc.weight", torch::ones({2, 3})},
                     {"model.fc.bias", torch::ones({5})},        // wrong shape
                     {"model.extra", torch::ones({1})},          // unexpected
                     {"other.fc.weight", torch::ones({2, 3})}};  // outside the prefix
  auto report = load_state_dict(*tiny, dict, "model.");
  EXPECT_EQ(report.loaded, 1u);
  EXPECT_TRUE(tiny->fc->weight.equal(torch::ones({2, 3})));
  EXPECT_EQ(tiny->fc->weight.data_ptr(), weight_before.data_ptr());  // same storage
  ASSERT_EQ(report.mismatched.size(), 1u);
  EXPECT_EQ(report.mismatched[0].name, "fc.bias");
  EXPECT_EQ(report.mismatched[0].checkpoint, (std::vector<int64_t>{5}));
  EXPECT_EQ(report.mismatched[0].model, (std::vector<int64_t>{2}));
  EXPECT_EQ(report.unexpected, (std::vector<std::string>{"model.extra", "other.fc.weight"}));
  EXPECT_EQ(report.missing.size(), 5u);  // bn.* (fc.bias is reported as mismatched)
  EXPECT_FALSE(report.complete());
  // Detectron2's (fvcore's) wording, names grouped by module.
  EXPECT_EQ(report.summary(),
            "loaded 1 tensors\n"
            "Skip loading parameter 'fc.bias' to the model due to incompatible shapes: (5,) in the "
            "checkpoint but (2,) in the model! You might want to double check if this is "
            "expected.\n"
            "Some model parameters or buffers are not found in the checkpoint:\n"
            "  bn.{bias, num_batches_tracked, running_mean, running_var, weight}\n"
            "  fc.bias\n"
            "The checkpoint state_dict contains keys that are not used by the model:\n"
            "  model.extra\n"
            "  other.fc.weight");
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
