// CUDA kernel of detkit::batched_nms, as torchvision runs it on a GPU: up to 20000 coordinates it
// shifts each category's boxes by category * (max coordinate + 1) and runs one NMS (detkit's CUDA
// nms, cuda/nms_kernel.cu); above that, NMS per category, the categories' keeps merged and
// ordered by decreasing score. Composed of ATen ops on the device; no kernel of its own.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "detkit/ops/checks.h"
#include "detkit/ops/nms.h"

namespace detkit::ops {
namespace {

// torchvision.ops.batched_nms on CUDA: above this many coordinates, NMS per category.
constexpr int64_t kPerCategoryAbove = 20000;

at::Tensor batched_nms_cuda(const at::Tensor& boxes, const at::Tensor& scores,
                            const at::Tensor& idxs, double iou_threshold) {
  check_batched_nms_arguments(boxes, scores, idxs);
  if (boxes.size(0) == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  if (boxes.numel() <= kPerCategoryAbove) {
    const at::Tensor offsets = idxs.to(boxes.scalar_type()) * (boxes.max() + 1);
    return nms(boxes + offsets.unsqueeze(1), scores, iou_threshold);
  }
  at::Tensor keep_mask = at::zeros({boxes.size(0)}, boxes.options().dtype(at::kBool));
  const at::Tensor categories = std::get<0>(at::_unique(idxs, /*sorted=*/true)).cpu();
  for (int64_t c = 0; c < categories.size(0); ++c) {
    const at::Tensor members = at::nonzero(idxs == categories[c].item()).squeeze(1);
    const at::Tensor kept =
        nms(boxes.index_select(0, members), scores.index_select(0, members), iou_threshold);
    keep_mask.index_fill_(0, members.index_select(0, kept), true);
  }
  const at::Tensor keep = at::nonzero(keep_mask).squeeze(1);
  const at::Tensor by_score = std::get<1>(scores.index_select(0, keep).sort(0, true));
  return keep.index_select(0, by_score);
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CUDA, m) { m.impl("batched_nms", TORCH_FN(batched_nms_cuda)); }

}  // namespace detkit::ops
