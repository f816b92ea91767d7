#pragma once
// Precomputed proposals (MODEL.LOAD_PROPOSALS, Detectron2's load_proposals_into_dataset and
// transform_proposals): each dataset's proposal file (DATASETS.PROPOSAL_FILES_TRAIN / _TEST, one
// per name of DATASETS.TRAIN / TEST) read once, each image's proposals sorted by decreasing
// objectness logit; the mapper then takes an image's proposals into its augmented frame: boxes
// through the transforms, clipped, empty ones dropped, the best PRECOMPUTED_PROPOSAL_TOPK_* kept.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/data/proposal_file.h"
#include "detkit/data/transforms/transform.h"
#include "detkit/structures/instances.h"

namespace detkit::data {

class CocoDataset;
class DetectionDataset;

class ProposalTable {
 public:
  /// Reads files[k] for dataset.parts()[k]. An error names the file when the counts differ or
  /// when an image of the dataset has no entry in its file (Detectron2 stops on it too).
  ProposalTable(const DetectionDataset& dataset, const std::vector<std::string>& files);
  /// The proposals of image `image_id` of `part` (one of the dataset's parts), best first.
  const ImageProposals& of(const CocoDataset& part, int64_t image_id) const;

 private:
  std::map<const CocoDataset*, std::map<int64_t, ImageProposals>> tables_;
};

/// The table for the training (is_train) or test datasets' proposal files when MODEL.LOAD_PROPOSALS
/// is on, else nullptr; `dataset` holds the names of DATASETS.TRAIN, or `test_name` of
/// DATASETS.TEST. Errors name the config key.
std::shared_ptr<const ProposalTable> proposal_table_from_config(const config::CfgNode& cfg,
                                                                const DetectionDataset& dataset,
                                                                bool is_train,
                                                                const std::string& test_name = "");

/// One image's proposals in its augmented (height, width) frame: "proposal_boxes" (float32 XYXY)
/// and "objectness_logits", at most `topk` of them (0: all).
structures::Instances transform_proposals(const ImageProposals& proposals,
                                          const TransformList& transforms, int64_t height,
                                          int64_t width, int64_t topk);

}  // namespace detkit::data
