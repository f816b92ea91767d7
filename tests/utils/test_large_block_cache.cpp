// The large-block cache: libtorch's blocks of 32 MiB and more are reused by the next tensor of
// their size class instead of being unmapped and faulted in again; smaller ones and raw
// allocations keep libtorch's allocator; the cache stops keeping blocks at its limit.
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "detkit/utils/large_block_cache.h"

namespace detkit {
namespace {

constexpr size_t MiB = size_t(1) << 20;

at::Tensor bytes(size_t n) { return at::empty({int64_t(n)}, at::kByte); }

TEST(LargeBlockCache, SizeClassesAreEighthsOfAPowerOfTwo) {
  EXPECT_EQ(large_block_class(32 * MiB), 32 * MiB);
  EXPECT_EQ(large_block_class(32 * MiB + 1), 36 * MiB);
  EXPECT_EQ(large_block_class(51 * MiB), 52 * MiB);
  EXPECT_EQ(large_block_class(64 * MiB), 64 * MiB);
  EXPECT_EQ(large_block_class(64 * MiB + 1), 72 * MiB);
  EXPECT_EQ(large_block_class(1000 * MiB), 1024 * MiB);
}

TEST(LargeBlockCache, AFreedLargeBlockServesTheNextTensorItFits) {
  install_large_block_cache();
  const size_t before = large_block_cache_bytes();
  void* first = nullptr;
  {
    at::Tensor t = bytes(39 * MiB);  // class 40 MiB
    first = t.data_ptr();
    t.fill_(1);
  }
  EXPECT_EQ(large_block_cache_bytes(), before + 40 * MiB);
  {
    at::Tensor again = bytes(33 * MiB);  // class 36 MiB: 40 MiB is within a third of it
    EXPECT_EQ(again.data_ptr(), first);
    EXPECT_EQ(large_block_cache_bytes(), before);
    at::Tensor other = bytes(45 * MiB);  // class 48 MiB: a block of its own
    EXPECT_NE(other.data_ptr(), first);
  }
  EXPECT_EQ(large_block_cache_bytes(), before + 88 * MiB);  // each kept at its own size
  {
    at::Tensor small = bytes(MiB);  // libtorch's own allocator
    EXPECT_EQ(large_block_cache_bytes(), before + 88 * MiB);
    at::Tensor much_larger = bytes(100 * MiB);  // neither kept block is large enough
    EXPECT_EQ(large_block_cache_bytes(), before + 88 * MiB);
  }
  {
    at::Tensor much_smaller = bytes(33 * MiB);  // 40 and 48 MiB kept, 36 wanted: the 40
    EXPECT_EQ(much_smaller.data_ptr(), first);
  }
}

TEST(LargeBlockCache, RawAllocationsOfEitherSizeAreFreedByTheirOwner) {
  install_large_block_cache();
  c10::Allocator* allocator = c10::GetCPUAllocator();
  void* small = allocator->raw_allocate(4096);
  void* large = allocator->raw_allocate(33 * MiB);
  ASSERT_NE(small, nullptr);
  ASSERT_NE(large, nullptr);
  const size_t before = large_block_cache_bytes();
  allocator->raw_deallocate(small);  // libtorch's own allocator frees it
  EXPECT_EQ(large_block_cache_bytes(), before);
  allocator->raw_deallocate(large);  // kept
  EXPECT_GT(large_block_cache_bytes(), before);
  void* again = allocator->raw_allocate(33 * MiB);
  EXPECT_EQ(again, large);
  allocator->raw_deallocate(again);
}

TEST(LargeBlockCache, KeepsNoMoreThanItsLimitDroppingTheLargestFirst) {
  install_large_block_cache();
  // Never written, so the pages are not faulted in: the test costs address space, not memory.
  const size_t half = kLargeBlockCacheLimit / 2;
  void* smaller = nullptr;
  {
    at::Tensor a = bytes(half), b = bytes(half + half / 4), c = bytes(half / 4);
    smaller = c.data_ptr();
  }  // c, b and a freed in turn: the largest kept blocks make room for each
  EXPECT_LE(large_block_cache_bytes(), kLargeBlockCacheLimit);
  EXPECT_GE(large_block_cache_bytes(), large_block_class(half));
  at::Tensor again = bytes(half / 4);
  EXPECT_EQ(again.data_ptr(), smaller);
}

}  // namespace
}  // namespace detkit
