#pragma once
// The ground truth of an LVIS annotation file (v0.5, v1) as lvis-api's LVIS class reads it for
// LVISEval: images with their negative and not-exhaustively-annotated categories, categories with
// their frequency group (r, c, f), annotations with the file's area and box and, for segm, the
// mask as lvis-api's ann_to_rle builds it (polygons rasterised at the image's size and merged).
//
// The file is streamed as COCO's files are (data/coco/json_stream.h): LVIS v1 train is 1.1 GB.
// Bad input is a detkit::Error starting with the file and naming the element and the id:
//   "<file>: images[3]: image id 5 is listed twice (also images[1])"
//   "<file>: annotations[17]: category_id 2000 is not in categories (annotation id 12345)"
//   "<file>: images[4]: neg_category_ids holds category id 2000, which is not in categories
//    (image id 9)"
#include <cstdint>
#include <string>
#include <vector>

#include "detkit/evaluation/coco_eval.h"

namespace detkit::evaluation {

struct LvisImage {
  int64_t id = 0;
  int64_t height = 0, width = 0;
  std::vector<int64_t> neg_category_ids;             // verified absent from the image
  std::vector<int64_t> not_exhaustive_category_ids;  // present, not every instance annotated
};

struct LvisCategory {
  int64_t id = 0;
  std::string name;
  char frequency = 'r';  // 'r' rare, 'c' common, 'f' frequent (lvis-api's img_count_lbl)
};

struct LvisGroundTruth {
  std::string file;
  std::vector<LvisImage> images;           // sorted by id
  std::vector<LvisCategory> categories;    // sorted by id
  std::vector<EvalObject> annotations;     // file order; rle set only for IouType::Segm
  std::vector<uint8_t> annotation_ignore;  // the annotation's optional "ignore" flag, by index

  /// The image with this id, or nullptr.
  const LvisImage* find_image(int64_t image_id) const;
  bool has_category(int64_t category_id) const;
};

/// Reads `path`. Masks are built only for IouType::Segm (the file's polygons or RLE); keypoints
/// are not LVIS's (an error).
LvisGroundTruth load_lvis_ground_truth(const std::string& path, IouType iou_type);

/// True when `path` is an LVIS file rather than a COCO one: the first image or category in the
/// file has LVIS's fields (an image "neg_category_ids" or "not_exhaustive_category_ids", a
/// category "frequency"). Reads the file only up to that element.
bool is_lvis_json(const std::string& path);

}  // namespace detkit::evaluation
