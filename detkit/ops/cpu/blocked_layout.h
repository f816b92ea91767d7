#pragma once
// What the kernels on blocked maps (nChw16c, held as (N, C / 16, H, W, 16) contiguous float32
// tensors) share: the check of such a map, its oneDNN descriptor, the far-side padding that
// makes a oneDNN window's output size libtorch's, and a parallel loop over its pixels. Internal
// to ops/cpu.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>

namespace detkit::ops::cpu {

/// A named error ("detkit <op>: <what> must be a contiguous float32 (N, C/16, H, W, 16) map")
/// unless x is a blocked map.
inline void check_blocked_map(const at::Tensor& x, const char* op, const char* what) {
  TORCH_CHECK(x.dim() == 5 && x.size(4) == 16 && x.is_contiguous() && x.scalar_type() == at::kFloat,
              "detkit ", op, ": ", what,
              " must be a contiguous float32 (N, C/16, H, W, 16) map, got ", x.sizes(), " ",
              x.scalar_type());
}

/// The oneDNN descriptor of a float32 blocked map of logical (N, C, H, W) `dims`.
inline dnnl::memory::desc blocked_desc(const dnnl::memory::dims& dims) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nChw16c);
}

/// The right / bottom padding of a window of `extent` input pixels at `stride`, with `padding`
/// on the near side, that gives `out` outputs from `in` inputs: less than the near side's (even
/// negative) where the stride skips the last inputs, as libtorch's output size does.
inline int64_t far_padding(int64_t in, int64_t out, int64_t extent, int64_t stride,
                           int64_t padding) {
  return (out - 1) * stride + extent - in - padding;
}

/// Runs fn(block, first pixel, pixels) over the (image, 16-channel block) pairs of a blocked map
/// and ranges of their H * W pixels, in parallel.
template <typename Fn>
void for_block_pixels(const at::Tensor& x, const Fn& fn) {
  const int64_t blocks = x.size(0) * x.size(1), pixels = x.size(2) * x.size(3);
  constexpr int64_t kGrain = 4096;  // pixels per task: 256 KB of a 16-channel block
  const int64_t chunks = (pixels + kGrain - 1) / kGrain;
  at::parallel_for(0, blocks * chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t block = i / chunks, p0 = (i % chunks) * kGrain;
      fn(block, p0, std::min(kGrain, pixels - p0));
    }
  });
}

}  // namespace detkit::ops::cpu
