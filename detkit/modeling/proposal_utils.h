#pragma once
// find_top_rpn_proposals: from the RPN's decoded boxes and objectness logits to each image's
// proposals, as Detectron2's detectron2/modeling/proposal_generator/proposal_utils.py.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "detkit/structures/instances.h"

namespace detkit::modeling {

/// proposals: L levels, level i (N, Hi * Wi * A, 4) XYXY boxes decoded from anchors.
/// pred_objectness_logits: L levels, level i (N, Hi * Wi * A).
/// image_sizes: N (height, width), the images' true sizes.
/// Per level and image, keeps the pre_nms_topk highest logits; then per image drops boxes with a
/// non-finite coordinate or logit (an error when `training`: training has diverged), clips boxes
/// to the image, drops boxes whose width or height is <= min_box_size, runs NMS at nms_thresh
/// separately on each level, and keeps the post_nms_topk best over all levels.
/// Returns N Instances of the images' sizes with "proposal_boxes" (Boxes, R) and
/// "objectness_logits" ((R) tensor), R <= post_nms_topk, by decreasing logit.
std::vector<structures::Instances> find_top_rpn_proposals(
    const std::vector<at::Tensor>& proposals, const std::vector<at::Tensor>& pred_objectness_logits,
    const std::vector<std::pair<int64_t, int64_t>>& image_sizes, double nms_thresh,
    int64_t pre_nms_topk, int64_t post_nms_topk, double min_box_size, bool training);

}  // namespace detkit::modeling
