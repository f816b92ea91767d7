#pragma once
// Reading a COCO results file ([{image_id, category_id, score, bbox | segmentation}, ...]) into
// detections for COCOeval, as pycocotools' loadRes does, with a clear error per bad entry.
#include <string>
#include <unordered_set>
#include <vector>

#include "detkit/evaluation/coco_eval.h"

namespace detkit::evaluation {

/// What results are checked against: the ground truth's image and category ids.
struct GroundTruthIds {
  std::unordered_set<int64_t> image_ids;
  std::unordered_set<int64_t> category_ids;
};

/// Parses `json_text` (from `file`, named in errors). bbox results get area w*h; segm results
/// take their area (and a missing bbox) from the RLE; keypoint results need `num_keypoints`
/// (x, y, score) triples and, as loadRes, take area and box from their "bbox" when they have one,
/// else from the keypoints' extent. Detection ids are 1, 2, ... in order.
/// Errors name the entry: "results.json: results[12]: image_id 7 is not in the ground truth".
std::vector<EvalObject> parse_coco_results(const std::string& json_text, const std::string& file,
                                           IouType iou_type, const GroundTruthIds& gt,
                                           size_t num_keypoints = 17);

std::vector<EvalObject> load_coco_results(const std::string& path, IouType iou_type,
                                          const GroundTruthIds& gt, size_t num_keypoints = 17);

}  // namespace detkit::evaluation
