#pragma once
// Detectron2's proposal files (DATASETS.PROPOSAL_FILES_*, and the box_proposals.pkl its
// COCOEvaluator writes for a ProposalNetwork): a pickled dict {"boxes": [float32 (R, 4) arrays],
// "objectness_logits": [float32 (R) arrays], "ids": [image ids], "bbox_mode": 0 or 1}, one entry
// per image, numpy arrays. Read with detkit's restricted unpickler (no code runs); written as
// numpy itself pickles arrays (protocol 3), so Python's pickle.load gives numpy arrays back.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace detkit::data {

/// One image's proposals: boxes (R, 4) float32 XYXY in the original image's pixels.
struct ImageProposals {
  int64_t image_id = 0;
  at::Tensor boxes;              // (R, 4) float32 XYXY
  at::Tensor objectness_logits;  // (R) float32
};

/// Reads a proposal file; XYWH boxes (bbox_mode 1) are converted to XYXY. A file that is not such
/// a dict (a missing key, lists of different lengths, an array of the wrong shape, another box
/// mode, an image id listed twice) is a detkit::Error naming the file and the key or the image.
std::vector<ImageProposals> read_proposal_file(const std::string& path);

/// Writes `proposals` to `path` (atomically) as Detectron2's COCOEvaluator does, bbox_mode 0.
void write_proposal_file(const std::string& path, const std::vector<ImageProposals>& proposals);

}  // namespace detkit::data
