#pragma once
// Running LVISEval and presenting its numbers: lvis-api's results dict and printed lines,
// Detectron2's x100 table (create_small_table), and the JSON `detkit evaluate --json` prints.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "detkit/evaluation/lvis_results.h"

namespace detkit::evaluation {

struct LvisEvalReport {
  IouType iou_type = IouType::Bbox;
  std::vector<std::pair<std::string, double>> results;       // lvis-api's, fractions, -1 undefined
  std::map<int64_t, std::optional<double>> per_category_ap;  // nullopt: no ground truth in play
  std::string summary;                                       // lvis-api's print_results() lines
  size_t num_results_after_cap = 0;                          // what LVISResults kept
  size_t num_detections_evaluated = 0;                       // what the federated rule kept
  size_t num_ground_truth = 0;                               // ground truth in play (area > 0)
};

/// LVISResults (the cap of `max_dets` per image) then LVISEval's run() on `results`.
LvisEvalReport evaluate_lvis(const LvisGroundTruth& gt, std::vector<LvisResult> results,
                             IouType iou_type, int64_t max_dets = 300,
                             const std::string& results_file = "results");

/// Detectron2's LVIS metrics of a task: AP, AP50, AP75, APs, APm, APl, APr, APc, APf.
const std::vector<std::string>& lvis_detectron2_metric_names();

/// Detectron2's results dict: its nine metrics x 100, in its order (-1 stays -100, as Detectron2
/// multiplies lvis-api's -1).
std::vector<std::pair<std::string, double>> lvis_detectron2_results(const LvisEvalReport& report);

/// Detectron2's create_small_table (tabulate, pipe format, centred, .3f) of a results dict.
std::string small_table(const std::vector<std::pair<std::string, double>>& results);

/// {"results": {"AP": ..., "ARl@300": ...}, "per_category_ap": {"<id>": AP or null},
///  "n_results_after_cap": N, "n_detections_evaluated": M, "n_gt": G} (fractions).
std::string lvis_report_json(const LvisEvalReport& report);

}  // namespace detkit::evaluation
