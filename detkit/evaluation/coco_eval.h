#pragma once
// COCOeval: COCO detection and keypoint metrics with pycocotools' exact semantics (default
// parameters give identical numbers): crowd ground truth as "ignore" with the detection's area as
// the union (bbox, segm), ground truth without labelled keypoints ignored and OKS as the
// similarity (keypoints),
// area ranges on the ground-truth area, maxDets per image and category after a stable score
// sort, greedy matching per IoU threshold, 101-point interpolated precision, -1 where undefined.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "detkit/evaluation/keypoint_oks.h"
#include "detkit/structures/mask_ops.h"

namespace detkit::evaluation {

enum class IouType { Bbox, Segm, Keypoints };

/// numpy.linspace(start, stop, num): the same doubles, bit for bit (k * step + start, last = stop).
std::vector<double> linspace(double start, double stop, int num);

struct EvalParams {
  std::vector<double> iou_thresholds = linspace(0.5, 0.95, 10);
  std::vector<double> recall_thresholds = linspace(0.0, 1.0, 101);
  std::vector<int64_t> max_dets = {1, 10, 100};
  std::vector<std::array<double, 2>> area_ranges = {
      {0, 1e10}, {0, 32 * 32}, {32 * 32, 96 * 96}, {96 * 96, 1e10}};
  std::vector<std::string> area_labels = {"all", "small", "medium", "large"};
  bool use_cats = true;
  std::vector<int64_t> image_ids;     // empty: every ground-truth image
  std::vector<int64_t> category_ids;  // empty: every ground-truth category
  std::vector<double> kpt_oks_sigmas = coco_person_keypoint_sigmas();  // keypoints only
};

/// pycocotools' defaults for the type: the above for bbox and segm; for keypoints (setKpParams)
/// maxDets 20 and the areas all / medium / large.
EvalParams default_eval_params(IouType iou_type);

/// One ground-truth annotation or one detection. For detections `score` is set, `iscrowd` is
/// false, and `area` is w*h (bbox) or the mask's area (segm), as pycocotools' loadRes sets it.
struct EvalObject {
  int64_t id = 0;  // ground truth: its annotation id; detections: 1, 2, ... in file order
  int64_t image_id = 0;
  int64_t category_id = 0;
  double score = 0;
  double area = 0;
  bool iscrowd = false;
  std::array<double, 4> bbox{};  // x, y, w, h
  mask_ops::RLE rle;             // used for segm
  // keypoints: x, y, v (ground truth) or x, y, score (detections) per keypoint; a ground truth
  // with num_keypoints 0 is ignored, as pycocotools does.
  std::vector<double> keypoints;
  int64_t num_keypoints = 0;
};

class COCOeval {
 public:
  /// gt_image_ids / gt_category_ids: every image and category of the ground-truth file.
  /// given_ious: IoUs (OKS for keypoints) to use instead of computing them (then boxes, masks
  /// and keypoints are not read), per (image id, category id; -1 where use_cats is off):
  /// detections x ground truth, row-major, the detections stably sorted by score and cut at
  /// max_dets.back(), the ground truth in the order given — as pycocotools' computeIoU returns
  /// them, for a pycocotools COCOeval subclass that computes them in Python. A pair with ground
  /// truth and detections but no matrix of that size is an error naming it.
  using IouMatrices = std::map<std::pair<int64_t, int64_t>, std::vector<double>>;
  COCOeval(std::vector<EvalObject> gts, std::vector<EvalObject> dts,
           std::vector<int64_t> gt_image_ids, std::vector<int64_t> gt_category_ids,
           IouType iou_type, EvalParams params = {},
           std::optional<IouMatrices> given_ious = std::nullopt);

  /// Matches detections to ground truth per image, category and area range.
  void evaluate();
  /// Builds the precision / recall tables.
  void accumulate();
  /// pycocotools' stats: for bbox and segm the 12 numbers AP, AP50, AP75, APs, APm, APl, AR1,
  /// AR10, AR100, ARs, ARm, ARl; for keypoints the 10 numbers AP, AP50, AP75, APm, APl, AR,
  /// AR50, AR75, ARm, ARl. -1 where undefined.
  std::vector<double> summarize() const;
  /// The lines pycocotools' summarize() prints, one per number.
  std::string summary_text() const;
  /// AP@[.5:.95] (area all, last maxDets) per category id; nullopt where there is no ground truth.
  std::map<int64_t, std::optional<double>> per_category_ap() const;

  const EvalParams& params() const { return params_; }

  /// After accumulate(), row-major as pycocotools' eval: precision and scores [T][R][K][A][M],
  /// recall [T][K][A][M]; -1 where undefined.
  const std::vector<double>& precision() const { return precision_; }
  const std::vector<double>& recall() const { return recall_; }
  const std::vector<double>& scores() const { return scores_; }

 private:
  struct ImageEval {  // pycocotools' evaluateImg result for one (category, area, image)
    std::vector<double> dt_scores;    // D, sorted by score
    std::vector<int64_t> dt_matches;  // T x D: matched ground-truth id, 0 when unmatched
    std::vector<uint8_t> dt_ignore;   // T x D
    std::vector<uint8_t> gt_ignore;   // G, ignored ground truth sorted last
  };

  struct Pair;  // ground truth and score-sorted detections of one (image, category), with IoUs

  Pair gather(int64_t image_id, int64_t category_id) const;
  ImageEval evaluate_image(const Pair& pair, const std::array<double, 2>& area_range) const;
  struct SummaryLine;
  std::vector<SummaryLine> summary_lines() const;
  double summarize_one(bool ap, std::optional<double> iou_threshold, const std::string& area,
                       int64_t max_dets) const;
  size_t precision_index(size_t t, size_t r, size_t k, size_t a, size_t m) const;
  size_t recall_index(size_t t, size_t k, size_t a, size_t m) const;

  std::vector<EvalObject> gts_, dts_;
  IouType iou_type_;
  EvalParams params_;
  std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> gts_by_image_cat_, dts_by_image_cat_;
  std::vector<std::optional<ImageEval>> evals_;  // [category][area][image]
  std::vector<double> precision_, recall_, scores_;  // -1 where undefined
  std::optional<IouMatrices> given_ious_;
  bool accumulated_ = false;
};

}  // namespace detkit::evaluation
