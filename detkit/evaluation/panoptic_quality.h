#pragma once
// Panoptic quality as panopticapi's pq_compute computes it. Per image, a ground-truth and a
// predicted segment of one category match when IoU > 0.5, the union leaving out the predicted
// pixels on void (id 0); crowd ground truth never matches; an unmatched non-crowd ground truth is
// a false negative; an unmatched prediction is a false positive unless more than half of it lies
// on void or on its category's crowd region. Per category PQ = sum IoU / (tp + fp/2 + fn/2),
// SQ = sum IoU / tp, RQ = tp / (tp + fp/2 + fn/2); All / Things / Stuff average the categories
// with tp + fp + fn > 0. Matched IoUs are summed in panopticapi's order (one worker: image after
// image, pairs by ground-truth id then predicted id), so the floats are its own.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "detkit/evaluation/panoptic_json.h"
#include "detkit/evaluation/segmentation_png.h"

namespace detkit::evaluation {

struct PQCategoryCounts {
  double iou = 0;  // sum of the matched IoUs
  int64_t tp = 0, fp = 0, fn = 0;
};

struct PQScores {
  double pq = 0, sq = 0, rq = 0;
};

struct PQAverage {
  double pq = 0, sq = 0, rq = 0;  // fractions; NaN when n = 0 (panopticapi divides by zero)
  int64_t n = 0;                  // categories with tp + fp + fn > 0
};

struct PQResult {
  PQAverage all, things, stuff;
  std::vector<std::pair<int64_t, PQScores>> per_class;  // every category, the JSON's order
  std::map<int64_t, PQCategoryCounts> counts;           // by category id, those with any
};

/// One image's counts: its matched IoUs in summation order (category, IoU), and tp/fp/fn.
struct PQImageCounts {
  std::vector<std::pair<int64_t, double>> matched;
  std::map<int64_t, PQCategoryCounts> counts;  // iou left 0: `matched` holds it
};

/// One image (pq_compute_single_core's loop body). The maps must have the same size; a
/// predicted id in the PNG without a segment, a listed segment without pixels, or an unknown
/// category is an error naming `prediction_name`, the image and the id.
PQImageCounts pq_compute_image(const PanopticAnnotation& ground_truth, const PixelMap& gt_ids,
                               const PanopticAnnotation& prediction, const PixelMap& pred_ids,
                               const std::map<int64_t, PanopticCategory>& categories,
                               const std::string& prediction_name);

/// pq_average for All (isthing nullopt), Things and Stuff, and the per-category scores.
PQResult pq_average(const std::map<int64_t, PQCategoryCounts>& counts,
                    const std::vector<PanopticCategory>& categories);

/// Reads an image's predicted id map (from a folder, or from memory).
using PanopticPngSource = std::function<PixelMap(const PanopticAnnotation& prediction)>;

/// pq_compute over every image of the ground truth (images run in parallel, summed in order).
/// An image without prediction is an error naming it; predictions of other images are ignored.
PQResult pq_compute(const PanopticJson& ground_truth, const std::string& gt_folder,
                    const std::vector<PanopticAnnotation>& predictions,
                    const PanopticPngSource& read_prediction);

/// pq_compute(gt_json_file, pred_json_file, gt_folder, pred_folder) on files.
PQResult pq_compute(const std::string& gt_json, const std::string& pred_json,
                    const std::string& gt_folder, const std::string& pred_folder);

}  // namespace detkit::evaluation
