#pragma once
// DetectionDataset: the images of one or more named COCO datasets as one list (DATASETS.TRAIN
// may name several; Detectron2 concatenates their dicts). Their categories must be identical,
// as Detectron2 checks thing_classes, so one class index means one thing everywhere.
#include <memory>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/data/coco/coco.h"
#include "detkit/data/coco/coco_dataset.h"

namespace detkit::data {

class DetectionDataset {
 public:
  /// `names[k]` names `parts[k]` in messages. An error when there are no images in all, or when
  /// two parts' categories (id and name, in order) differ.
  DetectionDataset(std::vector<std::shared_ptr<const CocoDataset>> parts,
                   std::vector<std::string> names);

  /// Number of images over all parts.
  size_t size() const { return locations_.size(); }

  /// Where image i of the list lives.
  struct Location {
    const CocoDataset* dataset;
    size_t image_index;
  };
  Location at(size_t i) const;

  const std::vector<Category>& categories() const { return parts_.front()->categories(); }
  const std::vector<std::shared_ptr<const CocoDataset>>& parts() const { return parts_; }
  const std::vector<std::string>& names() const { return names_; }

  /// Class indices of every annotation of every image (crowd included), for repeat factors.
  std::vector<std::vector<int>> image_categories() const;

 private:
  std::vector<std::shared_ptr<const CocoDataset>> parts_;
  std::vector<std::string> names_;
  std::vector<Location> locations_;
};

/// Loads each name through the global catalog (load_dataset) and concatenates them, filtered as
/// `options` say (training: DATALOADER.FILTER_EMPTY_ANNOTATIONS and, with MODEL.KEYPOINT_ON,
/// MODEL.ROI_KEYPOINT_HEAD.MIN_KEYPOINTS_PER_IMAGE). An error when `names` is empty.
DetectionDataset get_detection_dataset(const std::vector<std::string>& names,
                                       const CocoLoadOptions& options = {});

/// Training's load options from the config (the filters above).
CocoLoadOptions train_load_options_from_config(const config::CfgNode& cfg);

}  // namespace detkit::data
