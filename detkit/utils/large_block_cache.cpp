#include "detkit/utils/large_block_cache.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>

#include <iterator>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace detkit {
namespace {

class LargeBlockCache final : public c10::Allocator {
 public:
  explicit LargeBlockCache(c10::Allocator* base) : base_(base) {}

  c10::DataPtr allocate(size_t bytes) const override {
    if (bytes < kLargeBlockBytes) return base_->allocate(bytes);
    const size_t wanted = large_block_class(bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest kept block that is large enough and not much larger.
    auto kept = free_.lower_bound(wanted);
    Block block{nullptr, wanted};
    if (kept != free_.end() && double(kept->first) <= double(wanted) * kLargeBlockReuseRatio) {
      block = {kept->second, kept->first};
      cached_bytes_ -= kept->first;
      free_.erase(kept);
    } else {
      block.data = c10::alloc_cpu(wanted);
    }
    live_[block.data] = block.size;
    return {block.data, block.data, &release, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

  /// Back to the cache; to make room under kLargeBlockCacheLimit the largest kept blocks go back
  /// to the system first. Blocks that are not the cache's (raw allocations by the base
  /// allocator) go to the base's deleter.
  void give_back(void* data) {
    std::vector<void*> to_free;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = live_.find(data);
      if (it == live_.end()) return base_->raw_deleter()(data);
      const size_t size = it->second;
      live_.erase(it);
      while (!free_.empty() && cached_bytes_ + size > kLargeBlockCacheLimit) {
        auto largest = std::prev(free_.end());
        to_free.push_back(largest->second);
        cached_bytes_ -= largest->first;
        free_.erase(largest);
      }
      if (cached_bytes_ + size <= kLargeBlockCacheLimit) {
        free_.emplace(size, data);
        cached_bytes_ += size;
      } else {
        to_free.push_back(data);
      }
    }
    for (void* block : to_free) c10::free_cpu(block);
  }

  size_t cached_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return cached_bytes_;
  }

 private:
  struct Block {
    void* data;
    size_t size;
  };

  static void release(void* data);

  c10::Allocator* base_;
  mutable std::mutex mutex_;
  mutable std::unordered_map<void*, size_t> live_;  // handed out: block -> its size
  mutable std::multimap<size_t, void*> free_;       // kept: size -> block
  mutable size_t cached_bytes_ = 0;
};

LargeBlockCache* installed = nullptr;

void LargeBlockCache::release(void* data) { installed->give_back(data); }

}  // namespace

size_t large_block_class(size_t bytes) {
  size_t power = kLargeBlockBytes;
  while (power * 2 <= bytes) power *= 2;
  const size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

void install_large_block_cache() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never destroyed: tensors freed during static destruction still call back into it.
    installed = new LargeBlockCache(c10::GetCPUAllocator());
    c10::SetCPUAllocator(installed, /*priority=*/1);
  });
}

size_t large_block_cache_bytes() { return installed == nullptr ? 0 : installed->cached_bytes(); }

}  // namespace detkit
