#pragma once
// LVISEvaluator (Detectron2's): collects a model's detections on an LVIS dataset, writes them as
// an LVIS results file (OUTPUT_DIR/inference/lvis_instances_results.json: the dataset's category
// ids, XYWH boxes, RLE masks as compressed strings) and scores bbox and segm with LVISEval after
// LVISResults' cap of max_dets_per_image per image. Reports Detectron2's results dict per task:
// AP, AP50, AP75, APs, APm, APl, APr, APc, APf, x100 (lvis-api's -1 becomes -100 as in
// Detectron2; NaN for every metric when there is no detection at all).
#include <map>
#include <string>
#include <vector>

#include "detkit/evaluation/evaluator.h"
#include "detkit/evaluation/lvis_report.h"
#include "detkit/structures/instances.h"

namespace detkit::evaluation {

class LVISEvaluator : public DatasetEvaluator {
 public:
  /// json_file: the dataset's LVIS annotation file. tasks: empty infers them as Detectron2 does
  /// (bbox, plus segm when the detections have masks). output_dir "": no file.
  /// class_to_category_id: the dataset's category id of each contiguous class (Detectron2's
  /// thing_dataset_id_to_contiguous_id, inverted); empty: class + 1, Detectron2's LVIS rule.
  LVISEvaluator(std::string json_file, std::vector<IouType> tasks, std::string output_dir,
                int64_t max_dets_per_image = 300, std::vector<int64_t> class_to_category_id = {});

  /// predictions: "pred_boxes", "scores", "pred_classes" (contiguous classes) and optionally
  /// "pred_masks" (R, H, W) bool, in the original image's size.
  void process(int64_t image_id, const structures::Instances& predictions);
  void process(const data::InferenceSample& sample, const structures::ModelOutput& output) override;
  /// Every rank calls it; rank 0 gathers, writes, evaluates and reports.
  std::map<std::string, CocoEvalReport> evaluate() override;

  size_t num_detections() const { return detections_.size(); }
  /// The LVIS results file's text of this rank's detections (a JSON list).
  std::string results_json() const;

 private:
  struct Detection {
    int64_t image_id, category_id;
    float score;
    std::array<float, 4> xywh;
    int64_t mask_h = 0, mask_w = 0;
    std::string mask_counts;  // compressed RLE; empty: no mask
  };
  CocoEvalReport evaluate_task(const LvisGroundTruth& gt, const std::string& results_text,
                               IouType type) const;

  std::string json_file_;
  std::vector<IouType> tasks_;
  std::string output_dir_;
  int64_t max_dets_;
  std::vector<int64_t> class_to_category_id_;
  std::vector<Detection> detections_;
  size_t num_images_ = 0;
};

}  // namespace detkit::evaluation
