// CUDA kernels of detkit::nms and detkit::box_iou.
//
// NMS as torchvision's CUDA kernel does it: boxes in score order (a stable sort, as the CPU
// kernel), one thread per (box, block of 64 later boxes) computing a word of suppression bits on
// the device, then the sweep over the words on the host, which is one copy from the device (the
// one synchronisation Detectron2's NMS has too). Same IoU expression and threshold test as the
// CPU kernel (cuda/nms_math.h), so keep lists agree wherever the IoUs round alike.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <vector>

#include "detkit/ops/checks.h"
#include "detkit/ops/cuda/launch.h"
#include "detkit/ops/cuda/nms_math.h"

namespace detkit::ops {
namespace {

using cuda_math::kNmsBlock;

template <typename T>
__global__ void suppression_kernel(const T* boxes, int64_t n, int64_t blocks, double threshold,
                                   uint64_t* words) {
  const int64_t total = n * blocks;
  for (int64_t t = cuda::first_index(); t < total; t += cuda::grid_stride()) {
    const int64_t i = t / blocks, block = t % blocks;
    // Only blocks at or after the row's own hold later boxes.
    words[t] = block >= i / kNmsBlock ? cuda_math::suppression_word(boxes, n, i, block, threshold)
                                      : uint64_t{0};
  }
}

at::Tensor nms_cuda(const at::Tensor& boxes, const at::Tensor& scores, double iou_threshold) {
  check_nms_arguments(boxes, scores);
  const c10::cuda::CUDAGuard guard(boxes.device());
  const int64_t n = boxes.size(0);
  if (n == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  const at::Tensor order =
      std::get<1>(scores.sort(/*stable=*/true, /*dim=*/0, /*descending=*/true));
  const at::Tensor sorted = boxes.index_select(0, order).contiguous();
  const int64_t blocks = (n + kNmsBlock - 1) / kNmsBlock;
  at::Tensor words = at::empty({n, blocks}, boxes.options().dtype(at::kLong));
  AT_DISPATCH_FLOATING_TYPES(boxes.scalar_type(), "nms_cuda", [&] {
    suppression_kernel<scalar_t>
        <<<cuda::blocks_for(words.numel()), cuda::kThreads, 0, cuda::current_stream()>>>(
            sorted.data_ptr<scalar_t>(), n, blocks, iou_threshold,
            reinterpret_cast<uint64_t*>(words.data_ptr<int64_t>()));
  });
  cuda::check_launch("nms");
  const at::Tensor host_words = words.cpu();
  const std::vector<int64_t> kept =
      cuda_math::sweep_words(reinterpret_cast<const uint64_t*>(host_words.data_ptr<int64_t>()), n);
  const at::Tensor positions = at::tensor(kept, at::TensorOptions().dtype(at::kLong))
                                   .to(boxes.device(), /*non_blocking=*/true);
  return order.index_select(0, positions);
}

template <typename T>
__global__ void box_iou_kernel(const T* a, const T* b, int64_t n, int64_t m, T* out) {
  for (int64_t t = cuda::first_index(); t < n * m; t += cuda::grid_stride()) {
    out[t] = cuda_math::box_pair_iou(a + 4 * (t / m), b + 4 * (t % m));
  }
}

at::Tensor box_iou_cuda(const at::Tensor& a, const at::Tensor& b) {
  check_box_iou_arguments(a, b);
  const c10::cuda::CUDAGuard guard(a.device());
  at::Tensor iou = at::empty({a.size(0), b.size(0)}, a.options());
  if (iou.numel() == 0) return iou;
  const at::Tensor a_c = a.contiguous(), b_c = b.contiguous();
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "box_iou_cuda", [&] {
    box_iou_kernel<scalar_t>
        <<<cuda::blocks_for(iou.numel()), cuda::kThreads, 0, cuda::current_stream()>>>(
            a_c.data_ptr<scalar_t>(), b_c.data_ptr<scalar_t>(), a.size(0), b.size(0),
            iou.data_ptr<scalar_t>());
  });
  cuda::check_launch("box_iou");
  return iou;
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CUDA, m) {
  m.impl("nms", TORCH_FN(nms_cuda));
  m.impl("box_iou", TORCH_FN(box_iou_cuda));
}

}  // namespace detkit::ops
