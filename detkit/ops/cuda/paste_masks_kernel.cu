// CUDA kernel of detkit::paste_masks_in_image: one thread per image pixel of each mask, the CPU
// kernel's arithmetic per pixel (cuda/paste_masks_math.h) with multiply-adds rounded once, as
// CUDA's grid_sample compiles them. Pixels beyond one pixel of the box are false, as on the CPU
// (Detectron2's GPU path samples the whole image, which differs only at threshold 0).
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include "detkit/ops/checks.h"
#include "detkit/ops/cuda/launch.h"
#include "detkit/ops/cuda/paste_masks_math.h"

namespace detkit::ops {
namespace {

template <typename M, typename C>
__global__ void paste_kernel(const M* masks, int64_t n, int64_t mask_h, int64_t mask_w,
                             const C* boxes, int64_t image_h, int64_t image_w, M threshold,
                             bool* out) {
  const int64_t total = n * image_h * image_w;
  for (int64_t t = cuda::first_index(); t < total; t += cuda::grid_stride()) {
    const int64_t x = t % image_w, y = (t / image_w) % image_h, i = t / (image_w * image_h);
    out[t] = cuda_math::pasted_pixel<true, M, C>(masks + i * mask_h * mask_w, mask_h, mask_w,
                                                 boxes + 4 * i, image_h, image_w, y, x, threshold);
  }
}

at::Tensor paste_masks_cuda(const at::Tensor& masks, const at::Tensor& boxes, int64_t image_height,
                            int64_t image_width, double threshold) {
  check_paste_masks_arguments(masks, boxes, image_height, image_width, threshold);
  const int64_t n = masks.size(0);
  const c10::cuda::CUDAGuard guard(masks.device());
  at::Tensor out = at::empty({n, image_height, image_width}, masks.options().dtype(at::kBool));
  if (out.numel() == 0) return out;
  const bool mask_double = masks.scalar_type() == at::kDouble;
  const at::Tensor m = (mask_double ? masks : masks.to(at::kFloat)).contiguous();
  const bool box_double = boxes.scalar_type() == at::kDouble;
  const at::Tensor b = (box_double ? boxes : boxes.to(at::kFloat)).contiguous();
  AT_DISPATCH_FLOATING_TYPES(m.scalar_type(), "paste_masks_cuda", [&] {
    const unsigned int grid = cuda::blocks_for(out.numel());
    const scalar_t thr = static_cast<scalar_t>(threshold);
    if (box_double) {
      paste_kernel<scalar_t, double><<<grid, cuda::kThreads, 0, cuda::current_stream()>>>(
          m.data_ptr<scalar_t>(), n, m.size(1), m.size(2), b.data_ptr<double>(), image_height,
          image_width, thr, out.data_ptr<bool>());
    } else {
      paste_kernel<scalar_t, float><<<grid, cuda::kThreads, 0, cuda::current_stream()>>>(
          m.data_ptr<scalar_t>(), n, m.size(1), m.size(2), b.data_ptr<float>(), image_height,
          image_width, thr, out.data_ptr<bool>());
    }
  });
  cuda::check_launch("paste_masks_in_image");
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CUDA, m) { m.impl("paste_masks_in_image", TORCH_FN(paste_masks_cuda)); }

}  // namespace detkit::ops
