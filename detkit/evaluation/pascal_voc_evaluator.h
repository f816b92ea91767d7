#pragma once
// PascalVOCDetectionEvaluator (Detectron2's evaluation/pascal_voc_evaluation.py): each detection
// becomes a line of its class's results ("{image id} {score:.3f} {xmin + 1:.1f} {ymin + 1:.1f}
// {xmax:.1f} {ymax:.1f}"); evaluate() gathers the lines to rank 0, which scores every class
// with voc_eval at IoU 0.50, 0.55, ..., 0.95 — the 11-point metric for year 2007, the area
// metric otherwise — and reports {"bbox": {"AP", "AP50", "AP75"}} (percent). Scoring the printed
// lines, as Detectron2 does, keeps its rounding of boxes and scores.
#include <map>
#include <string>
#include <vector>

#include "detkit/evaluation/evaluator.h"
#include "detkit/evaluation/voc_eval.h"
#include "detkit/structures/instances.h"

namespace detkit::evaluation {

struct PascalVOCEvaluatorOptions {
  std::string dataset_name;              // for the log
  std::string dirname;                   // holds Annotations/ and ImageSets/Main/
  std::string split;                     // ImageSets/Main/<split>.txt
  int year = 2007;                       // 2007 (11-point) or 2012 (area)
  std::vector<std::string> class_names;  // by contiguous id
  std::vector<std::string> image_ids;    // the stem of each dataset index
  std::string output_dir;  // "" writes nothing; else <output_dir>/pascal_voc_results/<class>.txt
};

class PascalVOCDetectionEvaluator : public DatasetEvaluator {
 public:
  /// A year other than 2007 or 2012, or no class names, is an error.
  explicit PascalVOCDetectionEvaluator(PascalVOCEvaluatorOptions options);

  /// predictions: "pred_boxes" (XYXY, the original image's pixels), "scores", "pred_classes".
  void process(const std::string& image_id, const structures::Instances& predictions);
  void process(const data::InferenceSample& sample, const structures::ModelOutput& output) override;
  /// Every rank calls it; rank 0 returns {"bbox": report} with report.results = AP, AP50, AP75.
  std::map<std::string, CocoEvalReport> evaluate() override;

  /// The lines collected for a class index so far (this rank's).
  const std::vector<std::string>& lines(int class_index) const { return lines_.at(class_index); }

 private:
  PascalVOCEvaluatorOptions options_;
  std::vector<std::vector<std::string>> lines_;  // per class
};

}  // namespace detkit::evaluation
