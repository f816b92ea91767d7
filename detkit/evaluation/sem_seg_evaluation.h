#pragma once
// SemSegEvaluator: Detectron2's semantic-segmentation evaluator. Per image, the predicted class
// map (the argmax of the model's "sem_seg" logits) is counted against the ground-truth label PNG
// in a (C + 1)^2 confusion matrix whose last row and column are the ignore label; evaluate() sums
// the matrices of all ranks on rank 0, writes OUTPUT_DIR/sem_seg_predictions.json (per image and
// predicted class a COCO RLE, category_id the dataset's id) and reports mIoU, fwIoU, IoU-<class>,
// mACC, pACC, ACC-<class> in percent (sem_seg_metrics.h): Detectron2's numbers where Python's
// OpenCV is not installed. Where it is, Detectron2 adds Boundary IoU (BoundaryIoU-<class>,
// min(IoU, B-Iou)-<class>); detkit adds it on request (boundary_iou), bit for bit Detectron2's,
// including its uint8 overflow that scrambles the boundary matrix beyond 14 classes.
// Plain inputs (class names, label files), so that a caller without a model can use it.
#include <ATen/core/Tensor.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "detkit/evaluation/coco_report.h"
#include "detkit/evaluation/segmentation_png.h"
#include "detkit/evaluation/sem_seg_metrics.h"

namespace detkit::evaluation {

class SemSegEvaluator {
 public:
  /// class_names: the dataset's stuff_classes (C of them); ignore_label: the ground truth's
  /// unlabelled value (MetadataCatalog's ignore_label, 255 for COCO); output_dir "" writes no
  /// file; contiguous_id_to_dataset_id: the inverse of stuff_dataset_id_to_contiguous_id, for the
  /// predictions file's category_id (nullopt: the class index itself); boundary_iou: also the
  /// Boundary IoU metrics, as Detectron2 computes them when cv2 imports (and C < 255).
  SemSegEvaluator(
      std::vector<std::string> class_names, int64_t ignore_label, std::string output_dir,
      std::optional<std::map<int64_t, int64_t>> contiguous_id_to_dataset_id = std::nullopt,
      bool boundary_iou = false);

  /// file_name: the image's dataset file name, as written in the predictions file;
  /// ground_truth_png: its sem_seg_file_name; prediction: (H, W) integer classes, or (C, H, W)
  /// scores of which the argmax over C is taken (Detectron2's output["sem_seg"].argmax(dim=0)).
  void process(const std::string& file_name, const std::string& ground_truth_png,
               const at::Tensor& prediction);
  /// The same with both maps read already; ground_truth_name names the ground truth in errors.
  void process(const std::string& file_name, const PixelMap& ground_truth,
               const PixelMap& prediction, const std::string& ground_truth_name);

  /// {"sem_seg": report} with Detectron2's results dict in report.results, on rank 0; the other
  /// ranks of a job return nothing. Every rank must call it.
  std::map<std::string, CocoEvalReport> evaluate();

  /// The summed matrices and their metrics once evaluate() has run (rank 0); before it, this
  /// rank's own.
  const ConfusionMatrix& confusion_matrix() const { return matrix_; }
  const ConfusionMatrix& boundary_confusion_matrix() const { return boundary_matrix_; }
  SemSegMetrics metrics() const;
  const std::vector<std::string>& class_names() const { return class_names_; }

 private:
  void add_predictions_json(const std::string& file_name, const PixelMap& prediction);
  void gather();

  std::vector<std::string> class_names_;
  int64_t ignore_label_;
  std::string output_dir_;
  std::optional<std::map<int64_t, int64_t>> contiguous_id_to_dataset_id_;
  bool boundary_iou_;
  ConfusionMatrix matrix_, boundary_matrix_;
  std::vector<std::string> predictions_;  // sem_seg_predictions.json's entries, serialized
};

/// A model's sem_seg output as a class map: (H, W) integer classes as they are, (C, H, W) scores
/// through their argmax over C; `name` names the image in errors.
PixelMap predicted_classes(const at::Tensor& prediction, const std::string& name);

}  // namespace detkit::evaluation
