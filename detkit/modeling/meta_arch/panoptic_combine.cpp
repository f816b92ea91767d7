#include "detkit/modeling/meta_arch/panoptic_combine.h"

#include <ATen/ATen.h>

#include "detkit/utils/error.h"

namespace detkit::modeling {

structures::PanopticOutput combine_semantic_and_instance_outputs(
    const structures::Instances& instances, const at::Tensor& semantic_labels,
    const PanopticCombineOptions& options) {
  if (semantic_labels.dim() != 2)
    throw Error("combine_semantic_and_instance_outputs: the semantic labels must be (H, W)");
  structures::PanopticOutput out;
  out.ids = at::zeros(semantic_labels.sizes(), semantic_labels.options().dtype(at::kInt));
  int32_t next_id = 0;
  if (instances.size() > 0) {
    const at::Tensor scores = instances.tensor("scores").to(at::kCPU, at::kDouble);
    const at::Tensor classes = instances.tensor("pred_classes").to(at::kCPU, at::kLong);
    const at::Tensor masks = instances.tensor("pred_masks").to(out.ids.device(), at::kBool);
    const at::Tensor order = at::argsort(scores.neg(), /*stable=*/true);
    const auto order_a = order.accessor<int64_t, 1>();
    const auto score_a = scores.accessor<double, 1>();
    const auto class_a = classes.accessor<int64_t, 1>();
    for (int64_t k = 0; k < order.size(0); ++k) {
      const int64_t i = order_a[k];
      // Detectron2 compares the score as a Python float (the float32 value widened).
      const double score = score_a[i];
      if (score < options.instances_confidence_thresh) break;
      at::Tensor mask = masks[i];
      const int64_t mask_area = mask.sum().item<int64_t>();
      if (mask_area == 0) continue;
      const at::Tensor taken = out.ids.gt(0);
      const int64_t intersect_area = mask.logical_and(taken).sum().item<int64_t>();
      if (static_cast<double>(intersect_area) / static_cast<double>(mask_area) >
          options.overlap_thresh)
        continue;
      if (intersect_area > 0) mask = mask.logical_and(taken.logical_not());
      ++next_id;
      out.ids.masked_fill_(mask, next_id);
      structures::PanopticSegment segment;
      segment.id = next_id;
      segment.isthing = true;
      segment.score = score;
      segment.category_id = class_a[i];
      segment.instance_id = i;
      out.segments.push_back(segment);
    }
  }
  const at::Tensor labels =
      std::get<0>(at::_unique(semantic_labels, /*sorted=*/true)).to(at::kCPU, at::kLong);
  const auto labels_a = labels.accessor<int64_t, 1>();
  for (int64_t k = 0; k < labels.size(0); ++k) {
    const int64_t label = labels_a[k];
    if (label == 0) continue;  // Detectron2's special "things" class
    const at::Tensor mask = semantic_labels.eq(label).logical_and(out.ids.eq(0));
    const int64_t area = mask.sum().item<int64_t>();
    if (static_cast<double>(area) < options.stuff_area_limit) continue;
    ++next_id;
    out.ids.masked_fill_(mask, next_id);
    structures::PanopticSegment segment;
    segment.id = next_id;
    segment.isthing = false;
    segment.category_id = label;
    segment.area = area;
    out.segments.push_back(segment);
  }
  return out;
}

}  // namespace detkit::modeling
