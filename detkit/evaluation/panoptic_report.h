#pragma once
// Presenting panoptic quality: Detectron2's results dict and table (COCOPanopticEvaluator), and
// the JSON `detkit evaluate --iou-type panoptic --json` prints.
#include <map>
#include <string>

#include "detkit/evaluation/panoptic_quality.h"

namespace detkit::evaluation {

/// "PQ", "SQ", "RQ" (All), "PQ_th", ... (Things), "PQ_st", ... (Stuff), x100.
std::map<std::string, double> panoptic_results(const PQResult& result);

/// Detectron2's "Panoptic Evaluation Results:" table (tabulate, pipe format, centred, .3f):
/// PQ, SQ, RQ x100 and #categories for All, Things and Stuff.
std::string panoptic_results_table(const PQResult& result);

/// Per category PQ, SQ, RQ (x100), TP, FP, FN: the table below Detectron2's in `detkit evaluate`.
std::string panoptic_per_category_table(const PQResult& result,
                                        const std::map<int64_t, std::string>& category_names);

/// {"All": {"pq", "sq", "rq", "n"}, "Things": ..., "Stuff": ..., "per_category": {"<id>":
/// {"pq", "sq", "rq"}}}: fractions as pq_compute returns them, null for NaN.
std::string pq_result_json(const PQResult& result);

}  // namespace detkit::evaluation
