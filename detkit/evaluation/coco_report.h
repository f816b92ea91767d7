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
  std::vector<double> stats;  // pycocotools' order (12, or 10 for keypoints); -1 undefined
  std::map<int64_t, std::optional<double>> per_category_ap;  // nullopt: no ground truth
  std::string summary;                                       // pycocotools' summary lines
  std::map<int64_t, std::string> category_names;  // by id, where the evaluator knows them
  /// Detectron2's results dict of a task that is not COCOeval's (box_proposals: "AR@100",
  /// "ARs@100", ..., x100; sem_seg: "mIoU", "IoU-<class>", ...; panoptic_seg: "PQ", "SQ_th",
  /// ...); stats is empty then, iou_type unused and summary the evaluator's logged table.
  std::map<std::string, double> results;
};

/// params: nullopt gives pycocotools' defaults for the type (default_eval_params).
CocoEvalReport evaluate_coco(const CocoGroundTruth& gt, std::vector<EvalObject> detections,
                             IouType iou_type, std::optional<EvalParams> params = std::nullopt);

/// Detectron2's metric names of a type, in stats order: AP, AP50, AP75, APs, APm, APl (bbox,
/// segm); AP, AP50, AP75, APm, APl (keypoints).
std::vector<std::string> detectron2_metric_names(IouType iou_type);

/// Detectron2's tables: AP, AP50, ... x100, then per-category AP in three column pairs.
std::string detectron2_tables(const CocoEvalReport& report,
                              const std::map<int64_t, std::string>& category_names);

/// {"stats": [12 (or 10) numbers], "per_category_ap": {"<id>": AP or null}} (fractions, not x100).
std::string report_json(const CocoEvalReport& report);

const char* iou_type_name(IouType type);
/// Detectron2's results dict of a task, as its evaluators return it and its EvalHook puts it in
/// the event storage: "AP", "AP50", ... and "AP-<category name>" (category id where no name
/// is known), x100; undefined values (-1: no ground truth) left out.
std::map<std::string, double> detectron2_results(const CocoEvalReport& report);

/// "bbox", "segm" or "keypoints"; anything else is an error naming the value.
IouType parse_iou_type(const std::string& name);

}  // namespace detkit::evaluation
