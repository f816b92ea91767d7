// FLUSH_DENORMAL's modes: set on the calling thread, on every thread of its OpenMP team and on a
// thread detkit starts later; a subnormal float then reads and computes as zero; cleared again,
// it is kept.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <thread>

#include "detkit/utils/denormals.h"

namespace detkit {
namespace {

constexpr float kSubnormal = 1e-39f;  // below float's smallest normal, 1.18e-38

// libtorch splits an element-wise op of 2^16 floats across a team of 2 threads (32768 each):
// the product's zeros show which of them flushed.
int64_t flushed_products(const at::Tensor& subnormals) {
  return subnormals.numel() - (subnormals * 1.0f).count_nonzero().item<int64_t>();
}

bool worker_flushes() {
  bool flushes = false;
  std::thread worker([&] {
    apply_flush_denormal_to_this_thread();
    flushes = this_thread_flushes_denormals();
  });
  worker.join();
  return flushes;
}

TEST(FlushDenormal, EveryThreadDetkitComputesOnFlushesThenKeepsAgain) {
  at::set_num_threads(2);
  ASSERT_FALSE(flush_denormal());  // off by default, as PyTorch's
  ASSERT_FALSE(this_thread_flushes_denormals());
  const at::Tensor subnormals = at::full({1 << 16}, kSubnormal);  // split across the team

  ASSERT_TRUE(set_flush_denormal(true)) << "an x86-64 CPU has the modes";
  EXPECT_TRUE(flush_denormal());
  EXPECT_TRUE(this_thread_flushes_denormals());
  std::cout << flushed_products(subnormals) << " of " << subnormals.numel()
            << " subnormal products flushed to zero on 2 threads\n";
  EXPECT_EQ(flushed_products(subnormals), subnormals.numel());  // every thread of the team
  EXPECT_TRUE(worker_flushes());

  ASSERT_TRUE(set_flush_denormal(false));
  EXPECT_FALSE(this_thread_flushes_denormals());
  EXPECT_EQ(flushed_products(subnormals), 0);
  EXPECT_FALSE(worker_flushes());
  EXPECT_TRUE(at::equal(subnormals * 1.0f, subnormals));
}

}  // namespace
}  // namespace detkit
