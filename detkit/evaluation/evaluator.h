#pragma once
// The evaluator interface (Detectron2's DatasetEvaluator): inference_on_dataset hands each image's
// outputs to process(), then calls evaluate() once on every rank. COCOEvaluator (instances and
// proposals), SemSegEvaluator and COCOPanopticEvaluator implement it; DatasetEvaluators runs
// several over one pass, as Detectron2's train_net.py combines them by the dataset's
// evaluator_type.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "detkit/data/loader.h"
#include "detkit/evaluation/coco_report.h"
#include "detkit/structures/model_io.h"

namespace detkit::evaluation {

class DatasetEvaluator {
 public:
  virtual ~DatasetEvaluator() = default;
  /// One image: `sample` says which (its index in the dataset, its file id, the mapped input),
  /// `output` what the model gave for it.
  virtual void process(const data::InferenceSample& sample,
                       const structures::ModelOutput& output) = 0;
  /// Reports by task ("bbox", "segm", "keypoints", "box_proposals", "sem_seg", "panoptic_seg").
  /// Every rank calls it; rank 0 gathers, writes and reports, the other ranks return none.
  virtual std::map<std::string, CocoEvalReport> evaluate() = 0;
};

/// Several evaluators over one inference pass (Detectron2's DatasetEvaluators); their reports
/// merged (a task reported twice is an error naming it).
class DatasetEvaluators : public DatasetEvaluator {
 public:
  explicit DatasetEvaluators(std::vector<std::unique_ptr<DatasetEvaluator>> evaluators)
      : evaluators_(std::move(evaluators)) {}
  void process(const data::InferenceSample& sample, const structures::ModelOutput& output) override;
  std::map<std::string, CocoEvalReport> evaluate() override;
  size_t size() const { return evaluators_.size(); }

 private:
  std::vector<std::unique_ptr<DatasetEvaluator>> evaluators_;
};

}  // namespace detkit::evaluation
