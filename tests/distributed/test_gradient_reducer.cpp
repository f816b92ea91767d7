// GradientReducer in one process made rank 0 of 2 (the test communicator's peer holds the same
// gradients, so a mean over the ranks is this rank's gradient): buckets start while backward
// runs, in bucket order; finish() leaves the means; a parameter backward never reached is named;
// with hooks off it reads the gradients after backward. Two real ranks: GlooWorker.
#include "detkit/distributed/gradient_reducer.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "detkit/utils/error.h"
#include "tests/support/scoped_rank.h"

namespace detkit::distributed {
namespace {

// A chain of three layers: backward reaches c, then b, then a.
struct Chain {
  at::Tensor a = at::full({3}, 1.0).requires_grad_(), b = at::full({4}, 2.0).requires_grad_(),
             c = at::full({5}, 3.0).requires_grad_(), unused = at::zeros({2}).requires_grad_();
  at::Tensor loss() const { return ((a.sum() * b).sum() * c).pow(2).sum(); }
};

TEST(GradientReducer, StartsBucketsDuringBackwardAndLeavesTheMeans) {
  testing::ScopedRank rank(0, 2);
  Chain m, reference;
  reference.loss().backward();
  // Buckets of one parameter each (4 bytes per bucket at most).
  GradientReducer reducer({m.a, m.b, m.c}, {"a", "b", "c"}, /*hooks=*/true, /*bucket_bytes=*/4);
  int during_backward = -1;
  m.a.register_hook([&](const at::Tensor&) { during_backward = rank.collectives(); });
  reducer.prepare();
  m.loss().backward();
  // When a's gradient arrives (last), the buckets of c and b have started already.
  EXPECT_GE(during_backward, 2);
  reducer.finish();
  for (auto [got, want] : {std::pair{m.a, reference.a}, {m.b, reference.b}, {m.c, reference.c}})
    EXPECT_TRUE(got.grad().allclose(want.grad())) << got.grad() << want.grad();
  EXPECT_GE(reducer.last_timing().communication, 0.0);
  // A second step: the same again, hooks re-armed.
  m.a.mutable_grad() = m.b.mutable_grad() = m.c.mutable_grad() = at::Tensor();
  reducer.prepare();
  m.loss().backward();
  reducer.finish();
  EXPECT_TRUE(m.c.grad().allclose(reference.c.grad()));
}

TEST(GradientReducer, AfterTheFirstStepBucketsFollowTheOrderGradientsArrive) {
  testing::ScopedRank rank(0, 2);
  Chain m;
  // Listed so that reverse order puts a (whose gradient comes last) in the first bucket: in the
  // first step nothing starts before a's gradient; from the second, c's and b's buckets start
  // as soon as their gradients are in.
  GradientReducer reducer({m.c, m.b, m.a}, {"c", "b", "a"}, /*hooks=*/true, /*bucket_bytes=*/4);
  int at_prepare = 0;
  std::vector<int> started_by_b;  // buckets started when b's gradient has been taken
  m.b.register_hook([&](const at::Tensor&) { started_by_b.push_back(rank.collectives() - at_prepare); });
  for (int step = 0; step < 2; ++step) {
    m.a.mutable_grad() = m.b.mutable_grad() = m.c.mutable_grad() = at::Tensor();
    at_prepare = rank.collectives();
    reducer.prepare();
    m.loss().backward();
    reducer.finish();
  }
  EXPECT_EQ(started_by_b, (std::vector<int>{0, 2}));
}

TEST(GradientReducer, AParameterWithoutAGradientIsNamed) {
  testing::ScopedRank rank(1, 2);
  Chain m;
  GradientReducer reducer({m.a, m.unused, m.b, m.c}, {"a", "head.unused", "b", "c"});
  reducer.prepare();
  m.loss().backward();
  try {
    reducer.finish();
    ADD_FAILURE() << "finished without head.unused's gradient";
  } catch (const Error& e) {
    // The test's peer is this rank's copy: both lack it.
    EXPECT_EQ(std::string(e.what()).rfind("parameter head.unused got no gradient on rank 0, 1 of 2: ", 0),
              0u)
        << e.what();
  }
}

TEST(GradientReducer, WithoutHooksReadsTheGradientsAfterBackward) {
  testing::ScopedRank rank(0, 2);
  Chain m, reference;
  reference.loss().backward();
  GradientReducer reducer({m.a, m.b, m.c}, {"a", "b", "c"}, /*hooks=*/false);
  reducer.prepare();
  m.loss().backward();
  EXPECT_EQ(rank.collectives(), 0) << "started during backward without hooks";
  reducer.finish();
  EXPECT_TRUE(m.b.grad().allclose(reference.b.grad()));
  // The means are views of the one bucket (no copy back)...
  EXPECT_TRUE(m.a.grad().is_alias_of(m.b.grad()));
  // ...dropped by the next prepare(): a backward that accumulates starts from nothing, not from
  // the slot it is about to fill.
  reducer.prepare();
  m.loss().backward();
  reducer.finish();
  EXPECT_TRUE(m.b.grad().allclose(reference.b.grad())) << m.b.grad() << reference.b.grad();
}

TEST(GradientReducer, NothingInAWorldOfOne) {
  Chain m, reference;
  reference.loss().backward();
  GradientReducer reducer({m.a, m.unused}, {"a", "unused"});
  reducer.prepare();
  m.loss().backward();
  reducer.finish();  // no error for `unused`: one process has nobody to wait for
  EXPECT_TRUE(m.a.grad().equal(reference.a.grad()));
}

}  // namespace
}  // namespace detkit::distributed
