#include "detkit/utils/large_block_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <mutex>
#include <unordered_map>

namespace detkit {

namespace {

size_t round_to_pages(size_t nbytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (nbytes + page - 1) / page * page;
}

void* map(size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return data == MAP_FAILED ? nullptr : data;
}

// Every allocator's large blocks in use, by data pointer: the deleter gets only that pointer.
std::mutex blocks_mutex;
std::unordered_map<void*, void*>& blocks_in_use() {
  static auto* blocks = new std::unordered_map<void*, void*>();
  return *blocks;
}

}  // namespace

LargeBlockAllocator::LargeBlockAllocator(size_t min_block_bytes)
    : min_block_bytes_(min_block_bytes) {}

LargeBlockAllocator::~LargeBlockAllocator() { release_kept(); }

void LargeBlockAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  default_copy_data(dest, src, count);
}

c10::DataPtr LargeBlockAllocator::allocate(size_t nbytes) {
  if (nbytes < min_block_bytes_) return c10::GetDefaultCPUAllocator()->allocate(nbytes);
  const size_t bytes = round_to_pages(nbytes);
  Block* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    block = reuse_kept(bytes);
    if (block == nullptr) block = map_new(bytes);
    stats_.in_use_bytes += block->bytes;
    stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
    report_to_profiler(block->data, static_cast<int64_t>(block->bytes));
  }
  {
    std::lock_guard<std::mutex> lock(blocks_mutex);
    blocks_in_use()[block->data] = block;
  }
  return {block->data, block->data, &LargeBlockAllocator::free_block,
          c10::Device(c10::DeviceType::CPU)};
}

LargeBlockAllocator::Block* LargeBlockAllocator::reuse_kept(size_t bytes) const {
  if (kept_.empty()) return nullptr;
  // The smallest kept block that holds the request, else the largest.
  auto it = kept_.lower_bound(bytes);
  if (it == kept_.end()) it = std::prev(it);
  Block* block = it->second;
  kept_.erase(it);
  stats_.kept_bytes -= block->bytes;
  if (block->bytes > bytes && block->bytes - bytes > block->bytes / 5) {
    munmap(static_cast<char*>(block->data) + bytes, block->bytes - bytes);  // its tail
    block->bytes = bytes;
  } else if (block->bytes < bytes) {
    make_room(bytes);
    void* grown = mremap(block->data, block->bytes, bytes, MREMAP_MAYMOVE);
    if (grown == MAP_FAILED) {
      munmap(block->data, block->bytes);
      delete block;
      ++stats_.unmapped;
      return nullptr;
    }
    block->data = grown;
    block->bytes = bytes;
  }
  ++stats_.reused;
  return block;
}

LargeBlockAllocator::Block* LargeBlockAllocator::map_new(size_t bytes) const {
  make_room(bytes);
  void* data = map(bytes);
  if (data == nullptr && !kept_.empty()) {  // out of memory: give the kept blocks back first
    while (!kept_.empty()) unmap_least_recently_freed();
    data = map(bytes);
  }
  if (data == nullptr) {
    c10::reportOutOfMemoryToProfiler(
        static_cast<int64_t>(bytes), static_cast<int64_t>(stats_.in_use_bytes),
        static_cast<int64_t>(stats_.in_use_bytes), c10::Device(c10::DeviceType::CPU));
    TORCH_CHECK(false, "can't allocate memory: you tried to allocate ", bytes, " bytes (",
                stats_.in_use_bytes >> 20, " MiB held in large blocks already)");
  }
  ++stats_.mapped;
  return new Block{this, data, bytes, 0};
}

void LargeBlockAllocator::make_room(size_t block_bytes) const {
  const size_t peak = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes + block_bytes);
  while (!kept_.empty() && stats_.in_use_bytes + stats_.kept_bytes + block_bytes > peak)
    unmap_least_recently_freed();
}

void LargeBlockAllocator::report_to_profiler(void* data, int64_t bytes) const {
  if (!c10::memoryProfilingEnabled()) return;
  c10::reportMemoryUsageToProfiler(data, bytes, static_cast<int64_t>(stats_.in_use_bytes),
                                   static_cast<int64_t>(stats_.in_use_bytes + stats_.kept_bytes),
                                   c10::Device(c10::DeviceType::CPU));
}

c10::DeleterFnPtr LargeBlockAllocator::raw_deleter() const { return &free_block; }

void LargeBlockAllocator::free_block(void* data) {
  Block* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(blocks_mutex);
    auto it = blocks_in_use().find(data);
    if (it != blocks_in_use().end()) {
      block = static_cast<Block*>(it->second);
      blocks_in_use().erase(it);
    }
  }
  if (block == nullptr) {  // a small block, from the default allocator
    c10::GetDefaultCPUAllocator()->raw_deleter()(data);
    return;
  }
  block->owner->keep(block);
}

void LargeBlockAllocator::keep(Block* block) const {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.in_use_bytes -= block->bytes;
  stats_.kept_bytes += block->bytes;
  block->freed_at = ++frees_;
  kept_.emplace(block->bytes, block);
  report_to_profiler(block->data, -static_cast<int64_t>(block->bytes));
}

void LargeBlockAllocator::unmap_least_recently_freed() const {
  auto oldest = std::min_element(kept_.begin(), kept_.end(), [](const auto& a, const auto& b) {
    return a.second->freed_at < b.second->freed_at;
  });
  Block* block = oldest->second;
  kept_.erase(oldest);
  stats_.kept_bytes -= block->bytes;
  ++stats_.unmapped;
  munmap(block->data, block->bytes);
  delete block;
}

LargeBlockAllocator::Stats LargeBlockAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void LargeBlockAllocator::release_kept() const {
  std::lock_guard<std::mutex> lock(mutex_);
  while (!kept_.empty()) unmap_least_recently_freed();
}

LargeBlockAllocator& install_large_block_allocator() {
  // Never destroyed: tensors may be freed during static destruction.
  static auto* allocator = [] {
    auto* a = new LargeBlockAllocator(size_t{32} << 20);
    c10::SetCPUAllocator(a, /*priority=*/1);
    return a;
  }();
  return *allocator;
}

}  // namespace detkit
