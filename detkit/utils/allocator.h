#pragma once
// glibc malloc tuned for a training loop. By default glibc serves every block above 128 KiB (a
// threshold that adapts up to 32 MiB) with its own mmap and returns it to the kernel on free, so
// each iteration re-faults and re-zeroes the pages of its activations: ~10% of a Mask R-CNN
// step's time went to the kernel (page faults, clear_page). Keeping freed memory in the heap
// makes the next iteration reuse it.

namespace detkit {

/// Blocks up to 32 MiB (the largest mmap threshold glibc adapts to by itself) come from the heap,
/// the heap is never trimmed below its peak, and it grows in 256 MiB steps; environment variables
/// MALLOC_*_ set by the user win. Larger tensors come from a LargeBlockAllocator
/// (utils/large_block_allocator.h), which reuses their mappings. Call once, early in main().
void configure_allocator();

}  // namespace detkit
