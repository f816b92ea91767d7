#include "detkit/evaluation/coco_ground_truth.h"

namespace detkit::evaluation {

CocoGroundTruth ground_truth_from_dataset(const data::CocoDataset& dataset, IouType iou_type,
                                          size_t num_keypoints) {
  CocoGroundTruth gt;
  for (const auto& c : dataset.categories()) {
    gt.category_ids.push_back(c.id);
    gt.category_names[c.id] = c.name;
  }
  gt.objects.reserve(dataset.num_annotations());
  for (size_t i = 0; i < dataset.num_images(); ++i) {
    gt.image_ids.push_back(dataset.image(i).id);
    for (data::AnnotationView a : dataset.annotations_of(i)) {
      EvalObject o;
      o.id = a.id();
      o.image_id = dataset.image(i).id;
      o.category_id = a.category_id();
      o.area = a.area();
      o.iscrowd = a.iscrowd();
      o.bbox = a.bbox();
      if (iou_type == IouType::Segm) o.rle = a.mask_rle();
      if (iou_type == IouType::Keypoints) {
        data::CoordSpan k = a.keypoints();
        o.keypoints.assign(k.begin(), k.end());
        // Without "keypoints": unlabelled, so ignored like num_keypoints 0.
        if (o.keypoints.empty()) o.keypoints.assign(3 * num_keypoints, 0.0);
        o.num_keypoints = a.num_keypoints();
      }
      gt.objects.push_back(std::move(o));
    }
  }
  gt.ids.image_ids.insert(gt.image_ids.begin(), gt.image_ids.end());
  gt.ids.category_ids.insert(gt.category_ids.begin(), gt.category_ids.end());
  return gt;
}

}  // namespace detkit::evaluation
