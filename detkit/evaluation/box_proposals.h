#pragma once
// Box-proposal recall, as Detectron2's COCOEvaluator scores a ProposalNetwork's output
// (`box_proposals`): for each image, proposals sorted by objectness logit and cut to the top
// `limit`, then greedily matched one-to-one to the image's non-crowd ground-truth boxes of an
// area range (the best-covered box first); the recall at IoU 0.5, 0.55, ..., 0.95 averaged (AR).
// Detectron2's own "much faster alternative" to COCO's recall, kept with its rules: counts and
// IoUs in float32, images without proposals or without ground truth skipped.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "detkit/data/coco/coco_dataset.h"
#include "detkit/data/proposal_file.h"

namespace detkit::evaluation {

using data::ImageProposals;  // one image's proposals in the original image's pixels

/// Average recall (a fraction) over IoU 0.5:0.05:0.95 of the ground truth whose area lies in
/// [min_area, max_area], counting the top `limit` proposals of each image. An image id the
/// dataset does not have is a detkit::Error naming it.
double proposal_average_recall(const data::CocoDataset& dataset,
                               const std::vector<ImageProposals>& proposals, double min_area,
                               double max_area, int64_t limit);

/// Detectron2's `box_proposals` results: "AR@100", "ARs@100", "ARm@100", "ARl@100" and the same
/// "@1000", x100 (all areas, small < 32², medium, large > 96²).
std::map<std::string, double> box_proposal_results(const data::CocoDataset& dataset,
                                                   const std::vector<ImageProposals>& proposals);

/// The log's table of those results (Detectron2's "Proposal metrics:" small table).
std::string proposal_metrics_table(const std::map<std::string, double>& results);

}  // namespace detkit::evaluation
