#pragma once
// LVISEval: LVIS's detection metrics with lvis-api's exact semantics (lvis/eval.py). As COCOeval,
// less crowds and the per-image maxDets, plus LVIS's federated rules:
// - ground truth and detections with area <= 0 take no part (lvis-api's get_ann_ids filter);
// - a detection of category c on image i is evaluated only if c is annotated on i or is one of
//   i's neg_category_ids;
// - an unmatched detection is ignored when outside the area range or when its category is one of
//   the image's not_exhaustive_category_ids;
// - precision and recall over every detection kept (LVISResults capped them per image);
// - results: AP, AP50, AP75, APs, APm, APl, APr, APc, APf (categories by frequency), AR@300,
//   ARs@300, ARm@300, ARl@300; -1 where undefined.
#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "detkit/evaluation/lvis_ground_truth.h"

namespace detkit::evaluation {

struct LvisEvalParams {
  std::vector<double> iou_thresholds = linspace(0.5, 0.95, 10);
  std::vector<double> recall_thresholds = linspace(0.0, 1.0, 101);
  int64_t max_dets = 300;  // names the AR keys only: LVISResults applies the cap
  std::vector<std::array<double, 2>> area_ranges = {
      {0, 1e10}, {0, 32 * 32}, {32 * 32, 96 * 96}, {96 * 96, 1e10}};
  std::vector<std::string> area_labels = {"all", "small", "medium", "large"};
};

class LVISEval {
 public:
  /// detections: as lvis_results() gives them (areas set, ids 1, 2, ...).
  LVISEval(const LvisGroundTruth& gt, std::vector<EvalObject> detections, IouType iou_type,
           LvisEvalParams params = {});

  /// evaluate(), accumulate(), summarize(): lvis-api's run().
  void run();
  void evaluate();
  void accumulate();
  void summarize();

  /// lvis-api's results dict, in its order.
  const std::vector<std::pair<std::string, double>>& results() const { return results_; }
  double result(const std::string& key) const;
  /// Mean of precision[:, :, k, area all] over defined entries, by category id; nullopt where the
  /// category has no ground truth in play.
  std::map<int64_t, std::optional<double>> per_category_ap() const;
  /// The lines lvis-api's print_results() prints.
  std::string results_text() const;

  /// Detections kept by the federated rule; ground truth in play (area > 0).
  size_t num_detections_evaluated() const { return num_dts_evaluated_; }
  size_t num_ground_truth() const { return num_gts_; }

 private:
  struct ImageEval {
    std::vector<double> dt_scores;    // D, sorted by score
    std::vector<int64_t> dt_matches;  // T x D: matched ground-truth id, 0 when unmatched
    std::vector<uint8_t> dt_ignore;   // T x D
    std::vector<uint8_t> gt_ignore;   // G, ignored ones last
  };
  struct Pair {
    std::vector<size_t> gt, dt;  // gt in file order; dt stable-sorted by score
    std::vector<double> ious;    // dt.size() x gt.size()
  };

  Pair gather(size_t image, size_t category) const;
  ImageEval evaluate_image(const Pair& pair, size_t image,
                           const std::array<double, 2>& area_range) const;
  double summarize_one(bool ap, std::optional<double> iou_threshold, const std::string& area,
                       std::optional<char> frequency) const;
  size_t precision_index(size_t t, size_t r, size_t k, size_t a) const;

  const LvisGroundTruth& gt_;
  std::vector<EvalObject> dts_;
  IouType iou_type_;
  LvisEvalParams params_;
  std::map<std::pair<size_t, size_t>, std::vector<size_t>> gts_by_, dts_by_;  // (image, category)
  std::vector<std::vector<int64_t>> not_exhaustive_;                          // by image, sorted
  // [category * A + area]: the evaluations of the images with ground truth or detections of the
  // category, in image order (sparse: LVIS val has 1203 categories x 19809 images).
  std::vector<std::vector<ImageEval>> evals_;
  std::vector<double> precision_, recall_;       // T x R x K x A, T x K x A; -1 where undefined
  std::vector<std::pair<std::string, double>> results_;
  size_t num_dts_evaluated_ = 0, num_gts_ = 0;
  bool evaluated_ = false, accumulated_ = false;
};

}  // namespace detkit::evaluation
