#pragma once
// SemSegEvaluator and COCOPanopticEvaluator over a dataset's images, as inference_on_dataset
// feeds them (Detectron2's evaluators take the ground truth's location from the dataset's
// records and metadata): each image's label map at its sem_seg path, its panoptic prediction
// stored under its file name.
#include <memory>
#include <string>
#include <vector>

#include "detkit/data/detection_dataset.h"
#include "detkit/data/metadata.h"
#include "detkit/evaluation/coco_panoptic_evaluator.h"
#include "detkit/evaluation/evaluator.h"
#include "detkit/evaluation/sem_seg_evaluation.h"

namespace detkit::evaluation {

/// Semantic segmentation of `dataset` (one with label maps: a *_panoptic_separated or
/// *_stuffonly dataset) against its sem_seg paths, with the classes of `metadata` (stuff_classes,
/// ignore_label, stuff_dataset_ids for the predictions file). A dataset without label maps is an
/// error naming `dataset_name`.
class SemSegDatasetEvaluator : public DatasetEvaluator {
 public:
  SemSegDatasetEvaluator(const data::DetectionDataset& dataset, const data::Metadata& metadata,
                         const std::string& dataset_name, const std::string& output_dir);
  /// The output's sem_seg against the image's label map; an output without sem_seg is an error.
  void process(const data::InferenceSample& sample, const structures::ModelOutput& output) override;
  std::map<std::string, CocoEvalReport> evaluate() override { return evaluator_.evaluate(); }

 private:
  std::vector<std::string> file_names_, label_maps_;  // by index in the dataset
  SemSegEvaluator evaluator_;
};

/// Panoptic quality of `dataset`'s predictions against `metadata`'s panoptic_json and
/// panoptic_root, thing and stuff classes mapped to the dataset's category ids.
class PanopticDatasetEvaluator : public DatasetEvaluator {
 public:
  PanopticDatasetEvaluator(const data::DetectionDataset& dataset, const data::Metadata& metadata,
                           const std::string& dataset_name, const std::string& output_dir);
  /// The output's panoptic_seg; an output without one is an error.
  void process(const data::InferenceSample& sample, const structures::ModelOutput& output) override;
  std::map<std::string, CocoEvalReport> evaluate() override { return evaluator_.evaluate(); }

 private:
  std::vector<std::string> file_names_;  // by index in the dataset
  COCOPanopticEvaluator evaluator_;
};

}  // namespace detkit::evaluation
