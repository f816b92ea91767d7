#pragma once
// The numbers of Detectron2's SemSegEvaluator, from its confusion matrix: per-class IoU and
// pixel accuracy, their means over the classes that have them (mIoU, mACC), frequency-weighted
// IoU (fwIoU), pixel accuracy (pACC); and Boundary IoU from the second matrix it fills where
// OpenCV is installed. Computed in numpy's order of operations (its pairwise sums), so the
// values are Detectron2's to the last bit.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace detkit::evaluation {

/// (C + 1) x (C + 1) pixel counts: row = predicted class, column = ground-truth class, index C =
/// ignore (Detectron2's layout).
class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int64_t num_classes);
  /// Counts n pixels; every value must already lie in [0, C].
  void add(const int64_t* predicted, const int64_t* ground_truth, size_t n);
  void add(const ConfusionMatrix& other);
  int64_t num_classes() const { return num_classes_; }
  int64_t at(int64_t predicted, int64_t ground_truth) const {
    return counts_[predicted * (num_classes_ + 1) + ground_truth];
  }
  /// Row-major, (C + 1)^2.
  const std::vector<int64_t>& counts() const { return counts_; }
  std::vector<int64_t>& counts() { return counts_; }

 private:
  int64_t num_classes_;
  std::vector<int64_t> counts_;
};

/// Percent; NaN where Detectron2 gives NaN (a class without ground-truth pixels, or without
/// prediction nor ground truth for the IoU; a mean over no class).
struct SemSegMetrics {
  double miou = 0, fwiou = 0, macc = 0, pacc = 0;
  std::vector<double> iou, acc;      // per class
  std::vector<double> boundary_iou;  // per class; empty when not computed
};

/// boundary: the Boundary-IoU matrix, or nullptr.
SemSegMetrics sem_seg_metrics(const ConfusionMatrix& matrix,
                              const ConfusionMatrix* boundary = nullptr);

/// Detectron2's results dict in its order: mIoU, fwIoU, IoU-<class> (each followed by
/// BoundaryIoU-<class> and min(IoU, B-Iou)-<class> when computed), mACC, pACC, ACC-<class>.
std::vector<std::pair<std::string, double>> sem_seg_results(
    const SemSegMetrics& metrics, const std::vector<std::string>& class_names);

/// What Detectron2 logs: `OrderedDict([('sem_seg', {'mIoU': 74.15..., ...})])` (Python's repr).
std::string sem_seg_results_repr(const std::vector<std::pair<std::string, double>>& results);

/// `detkit evaluate --json`: {"mIoU", "fwIoU", "mACC", "pACC", "IoU": [...], "ACC": [...]},
/// percent, null for NaN.
std::string sem_seg_metrics_json(const SemSegMetrics& metrics);

/// A readable table: the four means, then IoU and ACC per class.
std::string sem_seg_metrics_table(const SemSegMetrics& metrics,
                                  const std::vector<std::string>& class_names);

/// Detectron2's _mask_to_boundary of a label map (values 0..255): L - erode(L) with a 3x3 kernel
/// applied max(1, round(0.02 * diagonal)) times after a 1-pixel zero border — a label
/// difference, which Detectron2 then counts as a class.
std::vector<int64_t> label_boundary(const std::vector<int64_t>& labels, int64_t height,
                                    int64_t width);

}  // namespace detkit::evaluation
