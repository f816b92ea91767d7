// LargeBlockAllocator: a freed large block is handed out again without new page faults, trimmed
// to a much smaller request and grown to a larger one; the blocks in use and the kept ones never
// exceed the most ever in use at once; small blocks go to libtorch's default allocator.
#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "detkit/utils/allocator.h"
#include "detkit/utils/large_block_allocator.h"

namespace detkit {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

int64_t minor_page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

void touch(const c10::DataPtr& block, size_t bytes) { std::memset(block.get(), 1, bytes); }

TEST(LargeBlockAllocator, AFreedBlockIsReusedWithoutPageFaults) {
  LargeBlockAllocator allocator(32 * kMiB);
  void* first = nullptr;
  {
    auto block = allocator.allocate(64 * kMiB);
    first = block.get();
    touch(block, 64 * kMiB);
  }
  EXPECT_EQ(allocator.stats().kept_bytes, 64 * kMiB);
  const int64_t faults_before = minor_page_faults();
  auto again = allocator.allocate(64 * kMiB);
  touch(again, 64 * kMiB);
  const int64_t faults = minor_page_faults() - faults_before;
  std::printf("page faults touching a reused 64 MiB block: %ld (a new one takes %zu)\n",
              static_cast<long>(faults), 64 * kMiB / 4096);
  EXPECT_EQ(again.get(), first);
  EXPECT_LT(faults, 64);
  const auto stats = allocator.stats();
  EXPECT_EQ(stats.reused, 1);
  EXPECT_EQ(stats.mapped, 1);
  EXPECT_EQ(stats.in_use_bytes, 64 * kMiB);
  EXPECT_EQ(stats.kept_bytes, 0u);
}

TEST(LargeBlockAllocator, AKeptBlockServesARequestAsItIsTrimmedOrGrown) {
  LargeBlockAllocator allocator(32 * kMiB);
  void* block_of_100 = nullptr;
  void* block_of_101 = nullptr;
  {
    auto a = allocator.allocate(100 * kMiB);
    auto b = allocator.allocate(101 * kMiB);
    block_of_100 = a.get();
    block_of_101 = b.get();
  }  // both kept; 201 MiB at the peak
  {
    auto as_it_is = allocator.allocate(81 * kMiB);  // 100 - 81 <= 100 / 5: the 100 MiB block
    EXPECT_EQ(as_it_is.get(), block_of_100);
    static_cast<char*>(as_it_is.get())[0] = 42;
    auto trimmed = allocator.allocate(60 * kMiB);  // 41 of 101 MiB wasted: its tail unmapped
    EXPECT_EQ(trimmed.get(), block_of_101);
    auto stats = allocator.stats();
    EXPECT_EQ(stats.in_use_bytes, 160 * kMiB);
    EXPECT_EQ(stats.kept_bytes, 0u);
  }
  // No kept block holds 140 MiB: the larger one (100) grows, keeping its pages and contents (the
  // 60 MiB one stays kept: 200 MiB resident, within the peak).
  auto grown = allocator.allocate(140 * kMiB);
  EXPECT_EQ(static_cast<char*>(grown.get())[0], 42);
  std::memset(grown.get(), 1, 140 * kMiB);
  const auto stats = allocator.stats();
  EXPECT_EQ(stats.mapped, 2);
  EXPECT_EQ(stats.reused, 3);
  EXPECT_EQ(stats.unmapped, 0);
  EXPECT_EQ(stats.in_use_bytes, 140 * kMiB);
  EXPECT_EQ(stats.kept_bytes, 60 * kMiB);
}

TEST(LargeBlockAllocator, KeptBlocksNeverTakeResidentMemoryPastThePeakInUse) {
  LargeBlockAllocator allocator(32 * kMiB);
  {
    auto a = allocator.allocate(64 * kMiB);
    auto b = allocator.allocate(64 * kMiB);
  }  // peak 128 MiB in use, both kept
  EXPECT_EQ(allocator.stats().kept_bytes, 128 * kMiB);
  // 100 MiB: one kept block grows to it, which would hold 164 MiB with the other one kept, so
  // that one is unmapped.
  auto c = allocator.allocate(100 * kMiB);
  auto stats = allocator.stats();
  EXPECT_EQ(stats.reused, 1);
  EXPECT_EQ(stats.unmapped, 1);
  EXPECT_EQ(stats.kept_bytes, 0u);
  EXPECT_EQ(stats.peak_in_use_bytes, 128 * kMiB);
  // A new peak: 100 + 64 in use, nothing kept.
  auto d = allocator.allocate(64 * kMiB);
  stats = allocator.stats();
  EXPECT_EQ(stats.mapped, 3);
  EXPECT_EQ(stats.peak_in_use_bytes, 164 * kMiB);
  EXPECT_LE(stats.in_use_bytes + stats.kept_bytes, stats.peak_in_use_bytes);
}

TEST(LargeBlockAllocator, SmallBlocksGoToTheOtherAllocatorAndReleaseKeptUnmapsTheRest) {
  LargeBlockAllocator allocator(32 * kMiB);
  {
    auto small = allocator.allocate(32 * kMiB - 1);
    auto large = allocator.allocate(32 * kMiB);
  }
  auto stats = allocator.stats();
  EXPECT_EQ(stats.mapped, 1);
  EXPECT_EQ(stats.kept_bytes, 32 * kMiB);
  allocator.release_kept();
  stats = allocator.stats();
  EXPECT_EQ(stats.kept_bytes, 0u);
  EXPECT_EQ(stats.unmapped, 1);
}

TEST(LargeBlockAllocator, RawAllocateAndDeallocateWorkForBothSizes) {
  // libtorch's oneDNN convolutions take their buffers this way.
  LargeBlockAllocator allocator(32 * kMiB);
  void* small = allocator.raw_allocate(1024);
  void* large = allocator.raw_allocate(48 * kMiB);
  std::memset(small, 1, 1024);
  std::memset(large, 1, 48 * kMiB);
  allocator.raw_deallocate(small);
  allocator.raw_deallocate(large);
  const auto stats = allocator.stats();
  EXPECT_EQ(stats.mapped, 1);
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_EQ(stats.kept_bytes, 48 * kMiB);
  EXPECT_EQ(allocator.raw_allocate(48 * kMiB), large);
  allocator.raw_deallocate(large);
}

TEST(LargeBlockAllocator, ARequestNoMappingCanHoldFailsNamingItsSize) {
  LargeBlockAllocator allocator(32 * kMiB);
  { auto kept = allocator.allocate(64 * kMiB); }
  const size_t beyond_the_address_space = size_t{1} << 48;  // 256 TiB: x86-64 maps 128 TiB
  try {
    allocator.allocate(beyond_the_address_space);
    FAIL() << "a 256 TiB block was mapped";
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_NE(message.find("can't allocate memory"), std::string::npos) << message;
    EXPECT_NE(message.find("281474976710656 bytes"), std::string::npos) << message;
  }
  const auto stats = allocator.stats();
  EXPECT_EQ(stats.kept_bytes, 0u);  // over the peak in use: given back before mapping
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_EQ(stats.mapped, 1);
}

#if !defined(__SANITIZE_ADDRESS__)  // the sanitizer's own mappings need room under the limit
// Bytes of address space the process has mapped.
size_t mapped_bytes() {
  size_t pages = 0;
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr || std::fscanf(statm, "%zu", &pages) != 1) pages = 0;
  if (statm != nullptr) std::fclose(statm);
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// In a child process whose address space is limited: growing a kept block fails, mapping a new
// one fails with another block still kept, and the kept block given back makes room for it.
int allocate_under_an_address_space_limit() {
  LargeBlockAllocator allocator(32 * kMiB);
  {
    auto a = allocator.allocate(100 * kMiB);
    auto b = allocator.allocate(100 * kMiB);
    auto c = allocator.allocate(100 * kMiB);
  }  // 300 MiB kept, the peak in use
  const rlimit limit{mapped_bytes() - 60 * kMiB, RLIM_INFINITY};
  if (setrlimit(RLIMIT_AS, &limit) != 0) return 2;
  // No kept block holds 150 MiB: one is unmapped to stay within the peak, the largest left cannot
  // grow (+50 MiB over the limit) and is unmapped, a new mapping fails with 100 MiB still kept;
  // those given back, it succeeds.
  auto block = allocator.allocate(150 * kMiB);
  std::memset(block.get(), 1, 150 * kMiB);
  const auto stats = allocator.stats();
  if (stats.mapped != 4 || stats.unmapped != 3 || stats.kept_bytes != 0 ||
      stats.in_use_bytes != 150 * kMiB)
    return 3;
  return 0;
}

TEST(LargeBlockAllocator, KeptBlocksAreGivenBackWhenTheSystemRefusesAMapping) {
  EXPECT_EXIT(std::_Exit(allocate_under_an_address_space_limit()), ::testing::ExitedWithCode(0),
              "");
}
#endif

TEST(LargeBlockAllocator, ConfigureAllocatorMakesItLibtorchsCpuAllocator) {
  configure_allocator();
  auto& installed = install_large_block_allocator();
  EXPECT_EQ(c10::GetCPUAllocator(), &installed);
  const auto before = installed.stats();
  {
    at::Tensor t = at::ones({16, kMiB / 2}, at::kFloat);  // 32 MiB
    EXPECT_EQ(t.sum().item<double>(), 16.0 * (kMiB / 2));
  }
  at::Tensor again = at::zeros({16, kMiB / 2}, at::kFloat);
  EXPECT_EQ(again.sum().item<double>(), 0.0);
  const auto after = installed.stats();
  EXPECT_EQ(after.mapped + after.reused - before.mapped - before.reused, 2);
  EXPECT_GE(after.reused - before.reused, 1);
}

}  // namespace
}  // namespace detkit
