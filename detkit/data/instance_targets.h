#pragma once
// One image's training targets in the augmented frame, with Detectron2's exact arithmetic
// (transform_instance_annotations, annotations_to_instances, filter_empty_instances):
//   box:     the COCO [x, y, w, h] converted to XYXY through float32 (BoxMode.convert of a list
//            makes a float32 tensor: x0 = f32(x), x1 = f32(f32(x) + f32(w))), transformed in
//            float64 (corners mapped, min/max), clipped to [0, new_w] x [0, new_h], stored as
//            float32;
//   polygon: float64, x scaled by new_w / w and y by new_h / h, flips applied;
//   RLE:     decoded, resized nearest-neighbour and flipped (bitmask format only);
//   keypoint: the file's x, y + 0.5 (COCO pixel indices to continuous coordinates, as
//            load_coco_json), transformed in float64, points outside [0, new_w] x [0, new_h]
//            made unlabelled, reordered by the flip indices under an odd number of horizontal
//            flips, unlabelled points set to (0, 0, 0), stored as float32; an annotation without
//            keypoints has K unlabelled ones;
// then instances whose box has a side <= 1e-5 (or, for bitmasks, an empty mask) are removed.
// Crowd annotations are never targets.
#include <array>
#include <string>
#include <vector>

#include "detkit/data/coco/coco_dataset.h"
#include "detkit/data/transforms/transform.h"
#include "detkit/structures/instances.h"

namespace detkit::data {

enum class MaskFormat { kNone, kPolygon, kBitmask };

/// INPUT.MASK_FORMAT ("polygon" or "bitmask") when MODEL.MASK_ON, else kNone.
MaskFormat mask_format_from_config(bool mask_on, const std::string& input_mask_format);

/// Detectron2's BoxMode.convert(XYWH_ABS -> XYXY_ABS) of one list box, through float32.
std::array<double, 4> coco_bbox_to_xyxy(const std::array<double, 4>& xywh);

/// Fields gt_boxes (Boxes, float32), gt_classes (int64), unless kNone gt_masks (PolygonMasks or
/// BitMasks of (new_h, new_w)) and, when `keypoint_flip_indices` is given (one entry per
/// keypoint: Metadata::keypoint_flip_indices), gt_keypoints (N, K, 3) float32. An error naming
/// the file and annotation id when a mask is needed but the annotation has none, an RLE meets the
/// polygon format, or an annotation has another number of keypoints than K. `recompute_boxes`
/// (a crop with masks, as Detectron2's DatasetMapper): gt_boxes become the masks' bounding boxes,
/// which bound a cropped object tightly where its cut box does not.
structures::Instances transform_instance_targets(
    const CocoDataset& dataset, size_t image_index, const TransformList& transforms, int new_h,
    int new_w, MaskFormat mask_format, const std::vector<int64_t>* keypoint_flip_indices = nullptr,
    bool recompute_boxes = false);

/// Detectron2's transform_keypoint_annotations for one annotation's keypoints (x, y, v per
/// keypoint, already + 0.5), in place.
void transform_keypoints(std::vector<double>& keypoints, const TransformList& transforms, int new_h,
                         int new_w, const std::vector<int64_t>& flip_indices);

}  // namespace detkit::data
