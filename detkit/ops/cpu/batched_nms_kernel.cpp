// CPU kernel of detkit::batched_nms, choosing between torchvision 0.14's two strategies as it
// does: up to 4000 coordinates it shifts each category's boxes by category * (max coordinate + 1)
// and runs one NMS (the shift rounds coordinates, so IoUs may differ in the last bit from the
// unshifted ones); above that it runs NMS per category, in parallel across categories. Keeping the
// same switch point keeps the keep lists identical to torchvision's.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <vector>

#include "detkit/ops/checks.h"
#include "detkit/ops/nms.h"

namespace detkit::ops {
namespace {

// torchvision.ops.batched_nms on CPU: above this many coordinates, NMS per category.
constexpr int64_t kPerCategoryAbove = 4000;

at::Tensor nms_with_offsets(const at::Tensor& boxes, const at::Tensor& scores,
                            const at::Tensor& idxs, double iou_threshold) {
  const at::Tensor max_coordinate = boxes.max();
  const at::Tensor offsets = idxs.to(boxes.scalar_type()) * (max_coordinate + 1);
  return nms(boxes + offsets.unsqueeze(1), scores, iou_threshold);
}

at::Tensor nms_per_category(const at::Tensor& boxes, const at::Tensor& scores,
                            const at::Tensor& idxs, double iou_threshold) {
  const at::Tensor categories = std::get<0>(at::_unique(idxs, /*sorted=*/true));
  std::vector<at::Tensor> members(categories.size(0));
  for (int64_t c = 0; c < categories.size(0); ++c) {
    members[c] = at::nonzero(idxs == categories[c]).squeeze(1);
  }
  at::Tensor keep_mask = at::zeros({boxes.size(0)}, boxes.options().dtype(at::kBool));
  bool* mask = keep_mask.data_ptr<bool>();
  // Categories are disjoint, so each thread marks its own boxes.
  at::parallel_for(0, categories.size(0), 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const at::Tensor& m = members[c];
      const at::Tensor kept =
          nms(boxes.index_select(0, m), scores.index_select(0, m), iou_threshold);
      const at::Tensor kept_original = m.index_select(0, kept);
      const int64_t* k = kept_original.data_ptr<int64_t>();
      for (int64_t i = 0; i < kept_original.size(0); ++i) mask[k[i]] = true;
    }
  });
  const at::Tensor keep = at::nonzero(keep_mask).squeeze(1);
  // torchvision orders with the default (unstable) sort; the same call gives the same tie order.
  const at::Tensor by_score = std::get<1>(scores.index_select(0, keep).sort(0, true));
  return keep.index_select(0, by_score);
}

at::Tensor batched_nms_kernel(const at::Tensor& boxes, const at::Tensor& scores,
                              const at::Tensor& idxs, double iou_threshold) {
  check_batched_nms_arguments(boxes, scores, idxs);
  if (boxes.size(0) == 0) return at::empty({0}, boxes.options().dtype(at::kLong));
  if (boxes.numel() > kPerCategoryAbove) {
    return nms_per_category(boxes, scores, idxs, iou_threshold);
  }
  return nms_with_offsets(boxes, scores, idxs, iou_threshold);
}

}  // namespace

TORCH_LIBRARY_IMPL(detkit, CPU, m) { m.impl("batched_nms", TORCH_FN(batched_nms_kernel)); }

}  // namespace detkit::ops
