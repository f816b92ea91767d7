#pragma once
// libtorch's CPU allocator with large freed blocks kept for reuse. glibc serves every block above
// its mmap threshold (32 MiB, utils/allocator.h) with its own mapping and unmaps it on free, so a
// training step at Detectron2's size (2 images at 1333x800: each 256-channel P2 map is 138 MB)
// faults in and zeroes most of its activations afresh every iteration: 15 M page faults in 5
// iterations of Faster R-CNN R50-FPN, a quarter of the step's time (docs/BENCHMARKS.md). Raising
// glibc's threshold instead keeps them in the heap but fragments it (peak RSS 4.6 -> 6.5 GB in the
// same run). This allocator keeps the mappings of freed large blocks and hands them out again: to a
// request the smallest kept block that holds it (its tail unmapped where it would waste more than a
// fifth), else the largest kept block grown to it (mremap keeps its pages), while the blocks in use
// and the kept ones together stay within the most the blocks in use have ever needed at once: kept
// blocks are unmapped (least recently freed first) before growing or mapping would exceed that,
// so the peak of resident memory is what it was without the cache.
#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace detkit {

class LargeBlockAllocator : public c10::Allocator {
 public:
  /// Blocks of at least min_block_bytes are kept and reused; smaller ones come from libtorch's
  /// default CPU allocator. It must outlive the tensors it allocates.
  explicit LargeBlockAllocator(size_t min_block_bytes);
  ~LargeBlockAllocator() override;

  c10::DataPtr allocate(size_t nbytes) override;
  /// Frees what allocate() gave of either size (oneDNN's buffers in libtorch come and go through
  /// raw_allocate / raw_deallocate).
  c10::DeleterFnPtr raw_deleter() const override;
  /// Host memory both ways: memcpy.
  void copy_data(void* dest, const void* src, std::size_t count) const override;

  struct Stats {
    size_t in_use_bytes = 0;  // large blocks held by tensors
    size_t kept_bytes = 0;    // large blocks freed and kept for reuse
    size_t peak_in_use_bytes = 0;
    int64_t reused = 0;    // allocations served by a kept block (as it was, trimmed or grown)
    int64_t mapped = 0;    // allocations that needed a new mapping
    int64_t unmapped = 0;  // kept blocks given back to the system
  };
  Stats stats() const;

  /// Gives every kept block back to the system (the blocks in use stay).
  void release_kept() const;

 private:
  struct Block {
    const LargeBlockAllocator* owner;
    void* data;
    size_t bytes;       // mapped
    uint64_t freed_at;  // while kept: order of frees, for least-recently-freed eviction
  };
  static void free_block(void* data);
  void keep(Block* block) const;
  // These require mutex_.
  Block* reuse_kept(size_t bytes) const;  // a kept block of at least `bytes`, or null
  Block* map_new(size_t bytes) const;
  // Unmaps kept blocks until those and the blocks in use, with one more of block_bytes (taken
  // from the kept ones or new), stay within the peak in use.
  void make_room(size_t block_bytes) const;
  void unmap_least_recently_freed() const;
  void report_to_profiler(void* data, int64_t bytes) const;

  size_t min_block_bytes_;
  mutable std::mutex mutex_;
  mutable std::multimap<size_t, Block*> kept_;  // by size
  mutable Stats stats_;
  mutable uint64_t frees_ = 0;
};

/// Makes a LargeBlockAllocator over libtorch's default one the CPU allocator of the process
/// (blocks of 32 MiB and more); once, later calls do nothing. Returns it.
LargeBlockAllocator& install_large_block_allocator();

}  // namespace detkit
