// COCO instances and person-keypoint JSON: the streaming loader and its every-problem check, in
// its COCO and its LVIS mode (lvis.h).
#include "detkit/data/coco/coco.h"
#include "detkit/data/coco/lvis.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = detkit::fuzz::write_scratch("instances.json", data, size);
  detkit::fuzz::refuse_only_with_named_errors([&] {
    detkit::data::CocoDataset ds = detkit::data::load_coco_json(path, "images");
    for (size_t i = 0; i < ds.num_images(); ++i) {
      (void)ds.image_path(i);
      for (const detkit::data::AnnotationView a : ds.annotations_of(i)) {
        (void)a.bbox();
        (void)a.polygons();
        (void)a.keypoints();
        if (a.num_polygons() == 0) (void)a.mask_rle();
      }
    }
    detkit::data::filter_empty_annotations(ds);
  });
  detkit::fuzz::refuse_only_with_named_errors(
      [&] { (void)detkit::data::check_coco_json(path, "images"); });
  detkit::fuzz::refuse_only_with_named_errors([&] {
    detkit::data::CocoDataset ds = detkit::data::load_lvis_json(path, "coco/");
    for (size_t i = 0; i < ds.num_images(); ++i) {
      (void)ds.image_path(i);
      for (int64_t id : ds.neg_category_ids(i)) (void)id;
      for (int64_t id : ds.not_exhaustive_category_ids(i)) (void)id;
      for (const detkit::data::AnnotationView a : ds.annotations_of(i)) (void)a.polygons();
    }
    (void)ds.class_names();
    detkit::data::filter_empty_annotations(ds);
  });
  detkit::fuzz::refuse_only_with_named_errors(
      [&] { (void)detkit::data::check_lvis_json(path, "coco/"); });
  return 0;
}
