#pragma once
// libtorch's CPU allocator, with freed blocks of 32 MiB and more kept for reuse. glibc serves
// blocks that large with their own mmap whatever configure_allocator sets (32 MiB is the largest
// mmap threshold it accepts) and unmaps them on free, so every training step re-faulted and
// re-zeroed the pages of its largest tensors: the mask head's upsampled maps and their gradients
// (128 ROIs x 128 x 28 x 28 floats = 51 MB each), an R50 FPN's P2 maps at larger sizes. Blocks
// are allocated in size classes (eighths of a power of two, at most 12.5 % unused) and a freed
// one serves the next tensor it fits without wasting more than a quarter of itself.
#include <cstddef>

namespace detkit {

/// What the cache keeps at most, in bytes: beyond it the largest kept blocks go back to the
/// system. Kept blocks count in the process's resident memory.
constexpr size_t kLargeBlockCacheLimit = size_t(512) << 20;

/// A kept block serves a tensor whose size class is at least 1 / kLargeBlockReuseRatio of it.
constexpr double kLargeBlockReuseRatio = 1.34;

/// The smallest block the cache handles; smaller ones go to libtorch's own CPU allocator.
constexpr size_t kLargeBlockBytes = size_t(32) << 20;

/// Makes the cache libtorch's CPU allocator for the rest of the process (once; later calls do
/// nothing). Tensors allocated before keep their own deleters. configure_allocator calls it.
void install_large_block_cache();

/// The size class a large block of `bytes` is allocated as (for kLargeBlockBytes and more).
size_t large_block_class(size_t bytes);

/// Bytes of freed blocks the cache holds now, waiting for reuse.
size_t large_block_cache_bytes();

}  // namespace detkit
