#pragma once
// Loading COCO instances files (instances_*.json) into a CocoDataset.
//
// The file is streamed in blocks and parsed with simdjson's On-Demand API (1.4-2x faster than
// its DOM API on COCO-shaped files: `coco_json_load --apis`), so peak memory is the dataset plus
// a few tens of megabytes, never the file's size. Byte offsets in messages count from 0.
//
// Bad input is a detkit::Error whose message starts with the file and names the place:
//   "<file>: malformed JSON at byte offset 1234 in annotations[17]: ..."
//   "<file>: annotations[17].bbox: width and height must be >= 0, got [1, 2, -3, 4] (annotation
//    id 12345)"
//   "<file>: annotations[17]: category_id 99 is not in categories (annotation id 12345)"
// check_coco_json() reports every such problem instead of stopping at the first.
#include <cstdint>
#include <string>
#include <vector>

#include "detkit/data/coco/coco_dataset.h"

namespace detkit::data {

struct CocoLoadOptions {
  /// Drop images without a usable (non-crowd) annotation, as Detectron2 does for training
  /// (DATALOADER.FILTER_EMPTY_ANNOTATIONS).
  bool filter_empty_annotations = false;
  /// Then drop images with fewer visible-or-labelled keypoints
  /// (MODEL.ROI_KEYPOINT_HEAD.MIN_KEYPOINTS_PER_IMAGE with MODEL.KEYPOINT_ON); 0 keeps every image.
  int min_keypoints_per_image = 0;
  /// Largest width * height an image may declare: PIL's decompression-bomb threshold
  /// (Image.MAX_IMAGE_PIXELS). A larger image is an error naming it.
  int64_t max_image_pixels = 89478485;
  /// The file's format; load_lvis_json (lvis.h) sets kLvis.
  JsonFormat format = JsonFormat::kCoco;
  /// LVIS only: the category ids need not be 1..K (a COCOfied LVIS file: COCO's ids, whose
  /// classes the caller then sets with CocoDataset::use_categories).
  bool lvis_any_category_ids = false;
};

/// Loads `json_file`; image paths are `image_root`/file_name. Logs what was dropped (spdlog
/// warnings) and filtered (spdlog info). Throws detkit::Error at the first problem.
CocoDataset load_coco_json(const std::string& json_file, const std::string& image_root,
                           const CocoLoadOptions& options = {});

/// Every problem load_coco_json would stop at, in file order, one message each; empty when the
/// file loads. Malformed JSON ends the check (what follows cannot be read).
std::vector<std::string> check_coco_json(const std::string& json_file,
                                         const std::string& image_root,
                                         const CocoLoadOptions& options = {});

/// Removes images without a non-crowd annotation (and their crowd annotations); returns how many
/// were removed (also added to stats().filtered_images) and logs it.
size_t filter_empty_annotations(CocoDataset& dataset);

/// Detectron2's filter_images_with_few_keypoints (MODEL.ROI_KEYPOINT_HEAD.MIN_KEYPOINTS_PER_IMAGE):
/// removes images whose annotations (crowds included) have fewer than `min_keypoints_per_image`
/// keypoints with v > 0; returns how many were removed and logs it.
size_t filter_images_with_few_keypoints(CocoDataset& dataset, int min_keypoints_per_image);

/// True when a relative `file_name` stays inside the image root: not absolute, no NUL, and no
/// ".." that climbs above the root.
bool file_name_stays_inside_root(const std::string& file_name);

}  // namespace detkit::data
