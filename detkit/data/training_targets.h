#pragma once
// What Detectron2 trains on from one COCO image (its annotations_to_instances input): every
// annotation except crowd regions, which are never training targets.
#include <array>
#include <cstdint>
#include <vector>

#include "detkit/data/coco/coco_dataset.h"
#include "detkit/structures/mask_ops.h"

namespace detkit::data {

/// One object to learn.
struct InstanceAnnotation {
  int64_t annotation_id;
  int class_index;                 // contiguous, 0..num_classes()-1
  std::array<double, 4> box_xyxy;  // [x0, y0, x1, y1] in pixels of the original image
  SegmentationKind segmentation_kind;
  std::vector<std::vector<double>> polygons;  // kPolygons: x0, y0, x1, y1, ... per polygon
  mask_ops::RLE rle;                          // kRle
};

/// The non-crowd annotations of image `image_index`, in file order.
std::vector<InstanceAnnotation> training_targets(const CocoDataset& dataset, size_t image_index);

}  // namespace detkit::data
