#pragma once
// Ground truth for COCOeval from a loaded COCO dataset: every annotation with the file's area,
// crowd flag and box, and (for segm) its mask as pycocotools' annToRLE builds it.
#include <map>
#include <string>
#include <vector>

#include "detkit/data/coco/coco_dataset.h"
#include "detkit/evaluation/coco_eval.h"
#include "detkit/evaluation/coco_results.h"

namespace detkit::evaluation {

struct CocoGroundTruth {
  std::vector<EvalObject> objects;
  std::vector<int64_t> image_ids;     // every image of the file
  std::vector<int64_t> category_ids;  // every category of the file, sorted
  std::map<int64_t, std::string> category_names;
  GroundTruthIds ids;  // for checking results files
};

/// Masks are rasterised only for IouType::Segm; keypoints are copied only for
/// IouType::Keypoints, where an annotation without them gets `num_keypoints` unlabelled ones.
CocoGroundTruth ground_truth_from_dataset(const data::CocoDataset& dataset, IouType iou_type,
                                          size_t num_keypoints = 17);

}  // namespace detkit::evaluation
