#pragma once
// Detections for LVISEval as lvis-api's LVISResults prepares them: at most `max_dets` per image
// (the highest scores, stable sort; 300 is LVIS's), then, when the first detection has a "bbox",
// every detection's area is its box's w * h (and one without a mask gets its box as the polygon
// [x1, y1, x1, y2, x2, y2, x2, y1]); otherwise the area is the mask's and a missing box is the
// mask's tight box. Detection ids are 1, 2, ... in the order after the cap (grouped by image, in
// the order images first appear).
#include <cstdint>
#include <string>
#include <vector>

#include "detkit/evaluation/lvis_ground_truth.h"

namespace detkit::evaluation {

/// One detection as read; `index` is its place in the results file (for messages).
struct LvisResult {
  EvalObject object;  // image_id, category_id, score; bbox and rle where present
  bool has_bbox = false;
  bool has_segmentation = false;
  size_t index = 0;
};

/// Parses a results file's text ([{image_id, category_id, score, bbox and/or segmentation}, ...];
/// segmentation a compressed or uncompressed RLE of the image's size). Errors name the entry:
/// "R.json: results[12]: category_id 2000 is not in the ground truth's categories".
std::vector<LvisResult> parse_lvis_results(const std::string& json_text, const std::string& file,
                                           const LvisGroundTruth& gt);
std::vector<LvisResult> load_lvis_results(const std::string& path, const LvisGroundTruth& gt);

/// LVISResults: the cap (none when max_dets < 0), the areas, boxes, masks (segm) and ids.
/// A detection without what the first one's branch needs ("bbox", or "segmentation") is an error
/// naming `file` and the entry.
std::vector<EvalObject> lvis_results(std::vector<LvisResult> results, const LvisGroundTruth& gt,
                                     IouType iou_type, int64_t max_dets = 300,
                                     const std::string& file = "results");

}  // namespace detkit::evaluation
