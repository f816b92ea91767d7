#include "detkit/evaluation/dataset_evaluators.h"

#include <map>

#include "detkit/utils/error.h"

namespace detkit::evaluation {

namespace {

std::vector<std::string> file_names_of(const data::DetectionDataset& dataset) {
  std::vector<std::string> names;
  names.reserve(dataset.size());
  for (size_t i = 0; i < dataset.size(); ++i) {
    const auto at = dataset.at(i);
    names.push_back(at.dataset->image_path(at.image_index));
  }
  return names;
}

std::map<int64_t, int64_t> by_contiguous_id(const std::vector<int64_t>& dataset_ids) {
  std::map<int64_t, int64_t> map;
  for (size_t i = 0; i < dataset_ids.size(); ++i) map[static_cast<int64_t>(i)] = dataset_ids[i];
  return map;
}

std::vector<std::string> label_maps_of(const data::DetectionDataset& dataset,
                                       const std::string& dataset_name) {
  std::vector<std::string> paths;
  paths.reserve(dataset.size());
  for (size_t i = 0; i < dataset.size(); ++i) {
    const auto at = dataset.at(i);
    auto path = at.dataset->sem_seg_path(at.image_index);
    if (!path)
      throw Error("SemSegEvaluator: dataset '" + dataset_name +
                  "' has no semantic label maps (a *_panoptic_separated or *_stuffonly dataset "
                  "has them)");
    paths.push_back(std::move(*path));
  }
  return paths;
}

}  // namespace

SemSegDatasetEvaluator::SemSegDatasetEvaluator(const data::DetectionDataset& dataset,
                                               const data::Metadata& metadata,
                                               const std::string& dataset_name,
                                               const std::string& output_dir)
    : file_names_(file_names_of(dataset)),
      label_maps_(label_maps_of(dataset, dataset_name)),
      evaluator_(metadata.stuff_classes, metadata.ignore_label, output_dir,
                 metadata.stuff_dataset_ids.empty()
                     ? std::nullopt
                     : std::optional(by_contiguous_id(metadata.stuff_dataset_ids))) {
  if (metadata.stuff_classes.empty())
    throw Error("SemSegEvaluator: dataset '" + dataset_name +
                "' has no stuff_classes in its metadata");
}

void SemSegDatasetEvaluator::process(const data::InferenceSample& sample,
                                     const structures::ModelOutput& output) {
  if (!output.sem_seg)
    throw Error("SemSegEvaluator: the model gave no sem_seg for " + file_names_.at(sample.index) +
                " (a SemanticSegmentor or PanopticFPN gives it)");
  evaluator_.process(file_names_.at(sample.index), label_maps_.at(sample.index), *output.sem_seg);
}

PanopticDatasetEvaluator::PanopticDatasetEvaluator(const data::DetectionDataset& dataset,
                                                   const data::Metadata& metadata,
                                                   const std::string& dataset_name,
                                                   const std::string& output_dir)
    : file_names_(file_names_of(dataset)),
      evaluator_(metadata.panoptic_json, metadata.panoptic_root,
                 by_contiguous_id(metadata.thing_dataset_ids),
                 by_contiguous_id(metadata.stuff_dataset_ids), output_dir) {
  if (metadata.panoptic_json.empty() || metadata.panoptic_root.empty())
    throw Error("COCOPanopticEvaluator: dataset '" + dataset_name +
                "' has no panoptic_json / panoptic_root in its metadata");
}

void PanopticDatasetEvaluator::process(const data::InferenceSample& sample,
                                       const structures::ModelOutput& output) {
  if (!output.panoptic_seg)
    throw Error("COCOPanopticEvaluator: the model gave no panoptic_seg for " +
                file_names_.at(sample.index) + " (a PanopticFPN gives it)");
  evaluator_.process(sample.image_id, file_names_.at(sample.index), *output.panoptic_seg);
}

}  // namespace detkit::evaluation
