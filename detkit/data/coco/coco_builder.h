#pragma once
// Builds a CocoDataset from the batches the JSON streamer hands out. Internal to detkit/data:
//   coco_element_parser.cpp     images and categories, and the batch loop (simdjson On-Demand);
//   coco_annotation_parser.cpp  annotations: every field checked, written to the dataset's
//                               arrays in file order;
//   coco_builder.cpp            once the file is read: ids checked across arrays, categories
//                               numbered, images sorted by id, annotations grouped by image.
#include <memory>
#include <string>
#include <vector>

#include "detkit/data/coco/coco.h"
#include "detkit/data/coco/coco_dataset.h"
#include "detkit/data/coco/coco_problems.h"
#include "detkit/data/coco/json_stream.h"

namespace detkit::data {

class CocoDatasetBuilder {
 public:
  CocoDatasetBuilder(const std::string& json_file, const std::string& image_root,
                     const CocoLoadOptions& options, ProblemList& problems);
  ~CocoDatasetBuilder();

  void add_images(ElementBatch& batch);
  void add_annotations(ElementBatch& batch);
  void add_categories(ElementBatch& batch);

  /// The dataset; meaningful only when no problem was found.
  CocoDataset finish();

  // Defined in coco_element_parser.h, which includes simdjson.
  struct Parser;   // simdjson state and the element parsers
  struct Element;  // one element being parsed

 private:
  void check_category_ids();
  void check_lvis_category_ids();  // 1..K, as Detectron2's load_lvis_json assumes
  void check_image_ids();
  void check_annotation_ids();
  void resolve_annotations(PodArray<uint32_t>& image_of);
  void group_annotations_by_image(const PodArray<uint32_t>& image_of);

  const CocoLoadOptions options_;
  ProblemList& problems_;
  std::unique_ptr<Parser> parser_;
  CocoDataset ds_;  // filled in file order, ordered by finish()

  // What finish() needs besides the dataset's own arrays, in file order.
  std::vector<uint64_t> category_element_;  // index in "categories" of each category
  PodArray<uint64_t> image_element_;        // index in "images" of each image
  PodArray<uint64_t> ann_element_;          // index in "annotations" of each annotation
  PodArray<int64_t> ann_image_ids_, ann_category_ids_;
  // Ids of elements rejected with a problem: references to them are not reported again.
  std::vector<int64_t> rejected_image_ids_, rejected_category_ids_;
};

}  // namespace detkit::data
