#pragma once
// Loading LVIS annotation files (lvis_v1_*.json, lvis_v0.5_*.json) as Detectron2's
// load_lvis_json reads them, through the streaming COCO loader (coco.h) in its LVIS mode:
//   - images: the file name is the last two '/'-separated parts of "coco_url"
//     ("http://images.cocodataset.org/val2017/000000010764.jpg" -> "val2017/000000010764.jpg",
//     under the image root; the image's "file_name", which v0.5 files have, is not used);
//     "neg_category_ids" and "not_exhaustive_category_ids" kept per image (empty when absent);
//   - annotations: no crowd regions ("iscrowd" is not read); "segmentation" must be polygons,
//     at least one, each of 3 or more points (Detectron2 asserts it: here a named error);
//   - categories: ids 1..K (Detectron2's class index is id - 1, here equal to the position of
//     the id among the sorted ids; CocoLoadOptions::lvis_any_category_ids lifts the rule for
//     COCOfied files, whose classes catalog.h's load_dataset sets to COCO's); "synonyms",
//     "frequency" and "image_count" kept; the class names are the first synonyms, as
//     Detectron2's LVIS metadata names them.
// Bad input is a detkit::Error starting with the file, as for COCO files (coco.h): e.g.
//   "<file>: annotations[17]: category_id 1300 is not in categories (annotation id 12345)"
//   "<file>: images[3] and images[9] have the same id 397133"
#include <string>
#include <vector>

#include "detkit/data/coco/coco.h"
#include "detkit/data/coco/coco_dataset.h"

namespace detkit::data {

/// Loads an LVIS file; image paths are `image_root`/<folder>/<file> from each image's coco_url.
/// `options.format` is set to JsonFormat::kLvis; the filters apply as for COCO.
CocoDataset load_lvis_json(const std::string& json_file, const std::string& image_root,
                           CocoLoadOptions options = {});

/// Every problem load_lvis_json would stop at, one message each; empty when the file loads.
std::vector<std::string> check_lvis_json(const std::string& json_file,
                                         const std::string& image_root,
                                         CocoLoadOptions options = {});

}  // namespace detkit::data
