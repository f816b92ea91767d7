// Files detkit writes are read by Python's torch.load (weights_only=True: plain types only) with
// the same keys and values, and by detkit's own reader.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/checkpoint/torch_file.h"
#include "detkit/utils/error.h"
#include "tests/checkpoint/checkpoint_oracle.h"

namespace detkit::checkpoint {
namespace {

// A trainer's checkpoint: model tensors under Detectron2 names, SGD and scheduler state with
// int keys and nested lists, the iteration.
c10::impl::GenericDict trainer_checkpoint() {
  torch::manual_seed(3);
  c10::Dict<std::string, at::Tensor> model;
  model.insert("backbone.bottom_up.stem.conv1.weight", torch::randn({4, 3, 7, 7}));
  model.insert("backbone.bottom_up.stem.conv1.norm.running_var", torch::rand({4}));
  model.insert("roi_heads.box_predictor.cls_score.bias", torch::arange(5, torch::kFloat));
  model.insert("proposal_generator.rpn_head.conv.weight",
               torch::randn({3, 3}).set_requires_grad(true));
  model.insert("transposed_view", torch::arange(12, torch::kFloat).reshape({3, 4}).t());
  model.insert("half", torch::randn({3}).to(torch::kHalf));
  model.insert("bn.num_batches_tracked", torch::tensor(int64_t{5}));

  c10::impl::GenericDict slot = make_dict();
  slot.insert("momentum_buffer", torch::full({2, 2}, 0.25));
  c10::impl::GenericDict state = make_dict();
  state.insert(int64_t{0}, slot);
  c10::impl::GenericDict group = make_dict();
  group.insert("lr", 0.02);
  group.insert("momentum", 0.9);
  group.insert("nesterov", false);
  group.insert("params", c10::List<int64_t>({0, 1, 2}));
  c10::impl::GenericList groups(c10::AnyType::get());
  groups.push_back(group);
  c10::impl::GenericDict optimizer = make_dict();
  optimizer.insert("state", state);
  optimizer.insert("param_groups", groups);

  c10::impl::GenericDict scheduler = make_dict();
  scheduler.insert("base_lrs", c10::List<double>({0.02}));
  scheduler.insert("last_epoch", int64_t{41});

  c10::impl::GenericDict checkpoint = make_dict();
  checkpoint.insert("model", model);
  checkpoint.insert("optimizer", optimizer);
  checkpoint.insert("scheduler", scheduler);
  checkpoint.insert("iteration", int64_t{41});
  checkpoint.insert(
      "note", c10::ivalue::Tuple::create({int64_t{1}, std::string("two"), c10::IValue(), -3.5}));
  return checkpoint;
}

TEST(TorchFileWrite, PythonTorchLoadReadsTheSameKeysAndValues) {
  if (!testing::have_python_torch()) GTEST_SKIP() << "python3-torch not found";
  testing::TempDir tmp("write");
  const c10::IValue original = trainer_checkpoint();
  const std::string written = tmp.path("model_0000041.pth");
  save_torch_file(written, original);
  // detkit's own reader.
  testing::expect_same_tree(load_torch_file(written), original);
  // Python: torch.load(weights_only=True) accepts it, and saves it back as Python would.
  const std::string resaved = tmp.path("resaved.pth");
  ASSERT_EQ(testing::run_checkpoint_oracle({"reload", written, resaved}, tmp), "");
  testing::expect_same_tree(load_torch_file(resaved), original);
}

TEST(TorchFileWrite, SavesViewsCompactlyAndReplacesFilesWhole) {
  testing::TempDir tmp("write_views");
  const at::Tensor big = torch::arange(100000, torch::kFloat);
  c10::Dict<std::string, at::Tensor> dict;
  dict.insert("small_view", big.slice(0, 10, 14));
  dict.insert("other", torch::ones({2}));
  const std::string path = tmp.path("views.pth");
  save_torch_file(path, dict);
  EXPECT_LT(std::filesystem::file_size(path), 4096u);  // not the 400 kB storage
  auto loaded = load_torch_file(path).toGenericDict();
  EXPECT_TRUE(loaded.at(c10::IValue("small_view")).toTensor().equal(big.slice(0, 10, 14)));
  // A second save replaces the file; nothing but the file is left in the folder.
  dict.insert_or_assign("other", torch::zeros({2}));
  save_torch_file(path, dict);
  EXPECT_TRUE(load_torch_file(path)
                  .toGenericDict()
                  .at(c10::IValue("other"))
                  .toTensor()
                  .equal(torch::zeros({2})));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(tmp.path()),
                          std::filesystem::directory_iterator()),
            1);
  EXPECT_THROW(save_torch_file(tmp.path("no/such/dir/x.pth"), dict), Error);
}

}  // namespace
}  // namespace detkit::checkpoint
