#include "detkit/data/training_targets.h"

namespace detkit::data {

std::vector<InstanceAnnotation> training_targets(const CocoDataset& dataset, size_t image_index) {
  std::vector<InstanceAnnotation> targets;
  for (AnnotationView a : dataset.annotations_of(image_index)) {
    if (a.iscrowd()) continue;
    auto [x, y, w, h] = a.bbox();
    InstanceAnnotation target{
        a.id(), a.class_index(), {x, y, x + w, y + h}, a.segmentation_kind(), {}, {}};
    if (target.segmentation_kind == SegmentationKind::kPolygons) target.polygons = a.polygons();
    if (target.segmentation_kind == SegmentationKind::kRle) target.rle = a.rle();
    targets.push_back(std::move(target));
  }
  return targets;
}

}  // namespace detkit::data
