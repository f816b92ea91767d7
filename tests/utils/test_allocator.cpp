// configure_allocator: a block of 16 MiB comes from the heap, not from its own mmap (glibc's
// default for anything above 128 KiB in a fresh process), so freeing it does not unmap pages.
#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>

#include "detkit/utils/allocator.h"

namespace detkit {
namespace {

TEST(Allocator, LargeBlocksComeFromTheHeap) {
  configure_allocator();
  const size_t mapped_before = mallinfo2().hblkhd;  // bytes in mmap-ed blocks
  void* block = std::malloc(16 << 20);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(mallinfo2().hblkhd, mapped_before);
  std::free(block);
}

}  // namespace
}  // namespace detkit
