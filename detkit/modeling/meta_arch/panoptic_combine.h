#pragma once
// Detectron2's combine_semantic_and_instance_outputs (panopticapi's simple combination): the
// instances by decreasing score, each kept while its score reaches INSTANCES_CONFIDENCE_THRESH
// and at most OVERLAP_THRESH of its mask lies on segments already placed (then only its free
// pixels); then each semantic label but 0 (Detectron2's "things" class) on the pixels left, kept
// when that area reaches STUFF_AREA_LIMIT.
#include <ATen/core/Tensor.h>

#include "detkit/structures/instances.h"
#include "detkit/structures/model_io.h"

namespace detkit::modeling {

struct PanopticCombineOptions {
  double overlap_thresh = 0.5;               // MODEL.PANOPTIC_FPN.COMBINE.OVERLAP_THRESH
  double stuff_area_limit = 4096;            // ...COMBINE.STUFF_AREA_LIMIT
  double instances_confidence_thresh = 0.5;  // ...COMBINE.INSTANCES_CONFIDENCE_THRESH
};

/// `instances`: detector_postprocess's output ("scores", "pred_classes", "pred_masks" (R, H, W)
/// bool); `semantic_labels`: (H, W) integer labels (the argmax of sem_seg). Segment ids 1, 2, ...
/// in the order placed; things' instance_id is the index into `instances`.
structures::PanopticOutput combine_semantic_and_instance_outputs(
    const structures::Instances& instances, const at::Tensor& semantic_labels,
    const PanopticCombineOptions& options);

}  // namespace detkit::modeling
