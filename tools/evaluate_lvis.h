#pragma once
// detkit evaluate on an LVIS ground-truth file (evaluate_command.cpp sends it here when the file
// has LVIS's fields): lvis-api's LVISEval after LVISResults' cap of 300 detections per image.
#include <string>

namespace detkit::tools {

/// Prints lvis-api's results lines and Detectron2's x100 table, or with `json` lvis-api's results
/// dict (fractions) with per_category_ap and the detection counts (lvis_report_json).
int evaluate_lvis(const std::string& gt, const std::string& results, const std::string& iou_type,
                  bool json);

}  // namespace detkit::tools
