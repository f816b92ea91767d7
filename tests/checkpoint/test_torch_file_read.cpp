// Reading files made by Python's torch.save: plain dicts, OrderedDicts with _metadata, nested
// Detectron2-style checkpoints, views of one storage, every supported dtype.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/checkpoint/torch_file.h"
#include "tests/checkpoint/checkpoint_oracle.h"

namespace detkit::checkpoint {
namespace {

using testing::PythonFixtures;

c10::impl::GenericDict load_dict(const std::string& name) {
  c10::IValue value = load_torch_file(PythonFixtures::get().file(name));
  EXPECT_TRUE(value.isGenericDict());
  return value.toGenericDict();
}

at::Tensor tensor_at(const c10::impl::GenericDict& dict, const std::string& key) {
  return dict.at(c10::IValue(key)).toTensor();
}

std::vector<std::string> keys_of(const c10::impl::GenericDict& dict) {
  std::vector<std::string> keys;
  for (const auto& entry : dict) keys.push_back(entry.key().toStringRef());
  return keys;
}

// The values oracle_checkpoint.py's tiny_state_dict() sets: arange(numel) + index.
void expect_tiny_state_dict(const c10::impl::GenericDict& dict) {
  EXPECT_EQ(keys_of(dict),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                      "1.running_var", "1.num_batches_tracked"}));
  int64_t index = 0;
  for (const auto& entry : dict) {
    const at::Tensor t = entry.value().toTensor();
    EXPECT_TRUE(t.equal((torch::arange(t.numel()) + index++).reshape(t.sizes()).to(t.dtype())))
        << entry.key().toStringRef() << " " << t;
  }
  EXPECT_EQ(tensor_at(dict, "1.num_batches_tracked").scalar_type(), at::kLong);
  EXPECT_EQ(tensor_at(dict, "0.weight").sizes(), (at::IntArrayRef{2, 3}));
}

TEST(TorchFileRead, PlainDict) {
  DETKIT_REQUIRE_PYTHON_FIXTURES();
  auto dict = load_dict("plain.pth");
  EXPECT_EQ(keys_of(dict), (std::vector<std::string>{"a", "b.c"}));
  EXPECT_TRUE(tensor_at(dict, "a").equal(torch::arange(4)));
  EXPECT_TRUE(tensor_at(dict, "b.c").equal(torch::ones({2, 2})));
}

TEST(TorchFileRead, OrderedDictWithMetadataKeepsOrderAndDropsAttributes) {
  DETKIT_REQUIRE_PYTHON_FIXTURES();
  expect_tiny_state_dict(load_dict("ordered.pth"));
}

TEST(TorchFileRead, NestedDetectron2Checkpoint) {
  DETKIT_REQUIRE_PYTHON_FIXTURES();
  auto dict = load_dict("nested.pth");
  EXPECT_EQ(keys_of(dict),
            (std::vector<std::string>{"model", "iteration", "optimizer", "scheduler", "extra"}));
  expect_tiny_state_dict(dict.at(c10::IValue("model")).toGenericDict());
  EXPECT_EQ(dict.at(c10::IValue("iteration")).toInt(), 7);

  auto optimizer = dict.at(c10::IValue("optimizer")).toGenericDict();
  auto state = optimizer.at(c10::IValue("state")).toGenericDict();
  auto slot = state.at(c10::IValue(int64_t{0})).toGenericDict();  // an int key
  EXPECT_TRUE(tensor_at(slot, "momentum_buffer").equal(torch::full({2, 3}, 0.5)));
  auto groups = optimizer.at(c10::IValue("param_groups")).toList();
  ASSERT_EQ(groups.size(), 1u);
  auto group = groups.get(0).toGenericDict();
  EXPECT_DOUBLE_EQ(group.at(c10::IValue("lr")).toDouble(), 0.02);
  EXPECT_FALSE(group.at(c10::IValue("nesterov")).toBool());
  EXPECT_EQ(group.at(c10::IValue("params")).toList().vec(),
            (std::vector<c10::IValue>{int64_t{0}, int64_t{1}}));

  auto scheduler = dict.at(c10::IValue("scheduler")).toGenericDict();
  EXPECT_EQ(scheduler.at(c10::IValue("last_epoch")).toInt(), 7);

  const auto& extra = dict.at(c10::IValue("extra")).toTupleRef().elements();
  ASSERT_EQ(extra.size(), 8u);
  EXPECT_EQ(extra[0].toInt(), 1);
  EXPECT_EQ(extra[1].toStringRef(), "two");
  EXPECT_TRUE(extra[2].isNone());
  EXPECT_DOUBLE_EQ(extra[3].toDouble(), -3.5);
  EXPECT_EQ(extra[4].toInt(), int64_t{1} << 40);
  EXPECT_EQ(extra[5].toInt(), -(int64_t{1} << 40));
  EXPECT_TRUE(extra[6].toBool());
  EXPECT_EQ(extra[7].toStringRef(), "\xc3\xa9");  // é, UTF-8
}

TEST(TorchFileRead, ViewsKeepOffsetsStridesAndShareTheirStorage) {
  DETKIT_REQUIRE_PYTHON_FIXTURES();
  auto dict = load_dict("views.pth");
  const at::Tensor x = torch::arange(60, torch::kFloat).reshape({3, 4, 5});
  const at::Tensor transposed = tensor_at(dict, "transposed");
  EXPECT_FALSE(transposed.is_contiguous());
  EXPECT_EQ(transposed.strides(), (at::IntArrayRef{1, 5, 20}));
  EXPECT_TRUE(transposed.equal(x.transpose(0, 2)));
  const at::Tensor sliced = tensor_at(dict, "sliced");
  EXPECT_EQ(sliced.storage_offset(), 25);
  EXPECT_TRUE(sliced.equal(
      x.index({1, torch::indexing::Slice(1, 3),
               torch::indexing::Slice(torch::indexing::None, torch::indexing::None, 2)})));
  EXPECT_TRUE(tensor_at(dict, "offset").equal(torch::arange(7, 13, torch::kFloat)));
  EXPECT_EQ(tensor_at(dict, "empty").sizes(), (at::IntArrayRef{0, 3}));
  EXPECT_EQ(tensor_at(dict, "scalar").dim(), 0);
  EXPECT_EQ(tensor_at(dict, "scalar").item<float>(), 3.5f);
  // Saved views of one tensor share one storage, as they do in Python.
  EXPECT_EQ(transposed.data_ptr(), tensor_at(dict, "base").data_ptr());
  EXPECT_TRUE(tensor_at(dict, "base").equal(x));
}

TEST(TorchFileRead, EveryStorageType) {
  DETKIT_REQUIRE_PYTHON_FIXTURES();
  auto dict = load_dict("dtypes.pth");
  const std::vector<std::pair<std::string, at::ScalarType>> types = {
      {"float64", at::kDouble}, {"float16", at::kHalf}, {"bfloat16", at::kBFloat16},
      {"int64", at::kLong},     {"int32", at::kInt},    {"int16", at::kShort},
      {"int8", at::kChar},      {"uint8", at::kByte}};
  const at::Tensor values = torch::tensor({0, 1, 2, 3, 100});
  for (const auto& [name, dtype] : types) {
    const at::Tensor t = tensor_at(dict, name);
    EXPECT_EQ(t.scalar_type(), dtype) << name;
    EXPECT_TRUE(t.equal(values.to(dtype))) << name << " " << t;
  }
  EXPECT_TRUE(tensor_at(dict, "bool").equal(torch::tensor({true, false, true})));
}

TEST(TorchFileRead, Detectron2FixtureMatchesLibtorchPickleLoad) {
  const std::string path = std::string(DETKIT_SHARED_DIR) + "/fixtures/detectron2/weights.pth";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent";
  const std::string bytes = read_file(path);
  const c10::IValue expected = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  const c10::IValue loaded = load_torch_file(path);
  ASSERT_GT(loaded.toGenericDict().size(), 100u);
  testing::expect_same_tree(loaded, expected);
}

}  // namespace
}  // namespace detkit::checkpoint
