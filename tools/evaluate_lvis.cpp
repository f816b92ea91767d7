#include "tools/evaluate_lvis.h"

#include <iostream>

#include "detkit/evaluation/coco_report.h"
#include "detkit/evaluation/lvis_report.h"
#include "detkit/utils/error.h"

namespace detkit::tools {

int evaluate_lvis(const std::string& gt_file, const std::string& results_file,
                  const std::string& iou_type, bool json) {
  if (results_file.empty()) throw Error("evaluate --iou-type " + iou_type + " needs --results");
  const evaluation::IouType type = evaluation::parse_iou_type(iou_type);
  if (type == evaluation::IouType::Keypoints)
    throw Error(gt_file + " is an LVIS file: LVIS has no keypoints; evaluate bbox or segm");
  const evaluation::LvisGroundTruth gt = evaluation::load_lvis_ground_truth(gt_file, type);
  auto results = evaluation::load_lvis_results(results_file, gt);
  const auto report = evaluation::evaluate_lvis(gt, std::move(results), type, 300, results_file);
  if (json) {
    std::cout << evaluation::lvis_report_json(report) << "\n";
    return 0;
  }
  std::cout << report.summary << "Evaluation results for " << iou_type << ": \n"
            << evaluation::small_table(evaluation::lvis_detectron2_results(report)) << "\n";
  return 0;
}

}  // namespace detkit::tools
