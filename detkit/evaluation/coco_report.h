#pragma once
// Running COCOeval and presenting its numbers: pycocotools' summary lines, Detectron2's x100
// tables, and the JSON form `detkit evaluate --json` prints.
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "detkit/evaluation/coco_ground_truth.h"

namespace detkit::evaluation {

struct CocoEvalReport {
  IouType iou_type;
  std::array<double, 12> stats;                          // pycocotools' order; -1 undefined
  std::map<int64_t, std::optional<double>> per_category_ap;  // nullopt: no ground truth
  std::string summary;                                   // pycocotools' 12 lines
};

CocoEvalReport evaluate_coco(const CocoGroundTruth& gt, std::vector<EvalObject> detections,
                             IouType iou_type, const EvalParams& params = {});

/// Detectron2's tables: AP, AP50, ... x100, then per-category AP in three column pairs.
std::string detectron2_tables(const CocoEvalReport& report,
                              const std::map<int64_t, std::string>& category_names);

/// {"stats": [12 numbers], "per_category_ap": {"<id>": AP or null}} (fractions, not x100).
std::string report_json(const CocoEvalReport& report);

const char* iou_type_name(IouType type);
/// "bbox" or "segm"; anything else is an error naming the value.
IouType parse_iou_type(const std::string& name);

}  // namespace detkit::evaluation
