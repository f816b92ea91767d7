#pragma once
// One image's training targets in the augmented frame, with Detectron2's exact arithmetic
// (transform_instance_annotations, annotations_to_instances, filter_empty_instances):
//   box:     the COCO [x, y, w, h] converted to XYXY through float32 (BoxMode.convert of a list
//            makes a float32 tensor: x0 = f32(x), x1 = f32(f32(x) + f32(w))), transformed in
//            float64 (corners mapped, min/max), clipped to [0, new_w] x [0, new_h], stored as
//            float32;
//   polygon: float64, x scaled by new_w / w and y by new_h / h, flips applied;
//   RLE:     decoded, resized nearest-neighbour and flipped (bitmask format only);
// then instances whose box has a side <= 1e-5 (or, for bitmasks, an empty mask) are removed.
// Crowd annotations are never targets.
#include <array>
#include <string>

#include "detkit/data/coco/coco_dataset.h"
#include "detkit/data/transforms/transform.h"
#include "detkit/structures/instances.h"

namespace detkit::data {

enum class MaskFormat { kNone, kPolygon, kBitmask };

/// INPUT.MASK_FORMAT ("polygon" or "bitmask") when MODEL.MASK_ON, else kNone.
MaskFormat mask_format_from_config(bool mask_on, const std::string& input_mask_format);

/// Detectron2's BoxMode.convert(XYWH_ABS -> XYXY_ABS) of one list box, through float32.
std::array<double, 4> coco_bbox_to_xyxy(const std::array<double, 4>& xywh);

/// Fields gt_boxes (Boxes, float32), gt_classes (int64) and, unless kNone, gt_masks
/// (PolygonMasks or BitMasks of (new_h, new_w)). An error naming the file and annotation id
/// when a mask is needed but the annotation has none, or an RLE meets the polygon format.
structures::Instances transform_instance_targets(const CocoDataset& dataset, size_t image_index,
                                                 const TransformList& transforms, int new_h,
                                                 int new_w, MaskFormat mask_format);

}  // namespace detkit::data
