// NaiveSyncBatchNorm2d in one process: in a world of one and in eval mode it is BatchNorm2d
// exactly; as rank 0 of 2 whose peer holds the same images (the test communicator's sums are
// twice this rank's values) its statistics are this batch's, with Detectron2's biased running
// variance. Two real ranks are checked in tests/distributed (GlooWorker).
#include "detkit/layers/sync_batch_norm.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "detkit/layers/norm.h"
#include "detkit/solver/param_groups.h"
#include "detkit/utils/error.h"
#include "tests/support/scoped_rank.h"

namespace detkit::layers {
namespace {

at::Tensor images() {
  auto gen = at::detail::createCPUGenerator(5);
  return at::randn({3, 4, 5, 6}, gen) * 2 + 1;
}

double max_diff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

TEST(NaiveSyncBatchNorm, OneProcessIsBatchNorm) {
  NaiveSyncBatchNorm2d sync(4);
  torch::nn::BatchNorm2d bn(4);
  const at::Tensor x1 = images().requires_grad_(), x2 = images().requires_grad_();
  const at::Tensor y1 = sync->forward(x1), y2 = bn->forward(x2);
  EXPECT_TRUE(y1.equal(y2));
  (y1 * y1).sum().backward();
  (y2 * y2).sum().backward();
  EXPECT_TRUE(x1.grad().equal(x2.grad()));
  EXPECT_TRUE(sync->weight.grad().equal(bn->weight.grad()));
  EXPECT_TRUE(sync->running_var.equal(bn->running_var));
  sync->eval();
  bn->eval();
  EXPECT_TRUE(sync->forward(x1).equal(bn->forward(x2)));
}

TEST(NaiveSyncBatchNorm, RankOfTwoUsesTheGlobalBatchStatistics) {
  for (bool per_rank : {true, false}) {
    testing::ScopedRank rank(0, 2);
    NaiveSyncBatchNorm2d sync(4, per_rank);
    torch::nn::BatchNorm2d bn(4);
    const at::Tensor x = images();
    const at::Tensor y = sync->forward(x), expected = bn->forward(x);
    const double d = max_diff(y, expected);
    std::cout << (per_rank ? "naiveSyncBN" : "naiveSyncBN_N") << ": max |output - BN's| " << d << "\n";
    EXPECT_LT(d, 1e-5);
    EXPECT_GE(rank.collectives(), 1);
    const at::Tensor biased = x.var({0, 2, 3}, /*unbiased=*/false);
    EXPECT_LT(max_diff(sync->running_var, 0.9 + 0.1 * biased), 1e-5);
    EXPECT_LT(max_diff(sync->running_mean, bn->running_mean), 1e-6);
    EXPECT_EQ(sync->num_batches_tracked.item<int64_t>(), 1);
  }
}

TEST(NaiveSyncBatchNorm, BuiltByItsConfigNamesAsANormLayer) {
  for (const char* name : {"SyncBN", "naiveSyncBN", "naiveSyncBN_N"}) {
    torch::nn::AnyModule m = make_norm(name, 8);
    auto* impl = dynamic_cast<NaiveSyncBatchNorm2dImpl*>(m.ptr().get());
    ASSERT_NE(impl, nullptr) << name;
    EXPECT_TRUE(solver::is_norm_module(*impl)) << name << ": WEIGHT_DECAY_NORM must apply";
    std::vector<std::string> names;
    for (const auto& item : impl->named_buffers()) names.push_back(item.key());
    EXPECT_EQ(names, (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  }
  testing::ScopedRank rank(0, 2);
  NaiveSyncBatchNorm2d sync(4);
  EXPECT_THROW(sync->forward(at::zeros({0, 4, 2, 2})), Error);
  NaiveSyncBatchNorm2d by_count(4, false);
  const at::Tensor empty = at::zeros({0, 4, 2, 2}).requires_grad_();
  EXPECT_EQ(by_count->forward(empty).size(0), 0);
  EXPECT_TRUE(by_count->running_mean.equal(at::zeros({4}))) << "no images anywhere: no update";
}

}  // namespace
}  // namespace detkit::layers
