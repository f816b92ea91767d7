#pragma once
// Launch settings shared by detkit's CUDA kernels: a grid-stride loop of kThreads per block on the
// current stream, and a check that names the op when a launch fails.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

#include <algorithm>
#include <cstdint>

namespace detkit::ops::cuda {

constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over `n` elements: enough to fill the device, at least one.
inline unsigned int blocks_for(int64_t n) {
  constexpr int64_t kMaxBlocks = 4096;  // each thread strides over the rest
  return static_cast<unsigned int>(
      std::clamp<int64_t>((n + kThreads - 1) / kThreads, int64_t{1}, kMaxBlocks));
}

#if defined(__CUDACC__)
/// A grid-stride loop: for (i = first_index(); i < n; i += grid_stride()).
__device__ inline int64_t first_index() { return blockIdx.x * int64_t{blockDim.x} + threadIdx.x; }
__device__ inline int64_t grid_stride() { return int64_t{blockDim.x} * gridDim.x; }
#endif

inline cudaStream_t current_stream() { return at::cuda::getCurrentCUDAStream(); }

/// Throws c10::Error naming `op` when the last kernel launch failed.
inline void check_launch(const char* op) {
  const cudaError_t err = cudaGetLastError();
  TORCH_CHECK(err == cudaSuccess, op, ": CUDA kernel launch failed: ", cudaGetErrorString(err));
}

}  // namespace detkit::ops::cuda
