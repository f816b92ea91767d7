#pragma once
// Detectron2's datasets/prepare_panoptic_fpn.py: the semantic label maps of the "panoptic
// separated" convention (register_coco_panoptic_separated's sem_seg_root), made from a COCO
// panoptic file and its PNGs. Every thing segment is label 0, the stuff categories are 1, 2, ...
// in category-id order (the order of the metadata's stuff_classes after "things"), void and
// pixels of no segment 255.
//
//   detkit prepare-panoptic-fpn --panoptic-json coco/annotations/panoptic_val2017.json \
//       --panoptic-root coco/panoptic_val2017 --output-dir coco/panoptic_stuff_val2017
#include <cstdint>
#include <map>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "detkit/data/coco/panoptic_dataset.h"

namespace detkit::data {

/// The semantic label of each category id: things 0, stuff 1.. in the order given (Detectron2
/// numbers COCO_CATEGORIES' stuff, which is in id order, as read_panoptic_categories returns
/// them). More than 254 stuff categories is an error (255 is void).
std::map<int64_t, uint8_t> separated_semantic_labels(
    const std::vector<PanopticCategory>& categories);

/// The (H, W) uint8 label map of one panoptic image: `ids` (H, W) int32 segment ids
/// (read_panoptic_ids), each segment's pixels labelled as `labels` says for its category, id 0
/// (void) 255. A nonzero id with no segment in `segments` (Detectron2 would leave it 255 without
/// a word) and a segment whose category has no label are detkit::Errors naming `path`.
cv::Mat panoptic_to_semantic(const cv::Mat& ids, SegmentSpan segments,
                             const std::map<int64_t, uint8_t>& labels, const std::string& path);

struct PreparePanopticOptions {
  int num_workers = 0;  // threads converting images; 0: one per core. The output does not change.
};

/// Converts every annotation of `panoptic_json` (its PNGs under `panoptic_root`) into
/// `output_dir`/<PNG file name's stem>.png, 8-bit grey (what Detectron2's load_sem_seg pairs with
/// the image of the same stem); makes `output_dir`. Returns the number of files written. Each file
/// is written whole (atomic_write): an error (a missing or unreadable PNG, a PNG whose size is
/// not the "images" entry's, an id without a segment, an unknown category: load_coco_panoptic_json
/// checks the file) is a detkit::Error naming the file, and leaves no half-written label map;
/// maps already written stay.
size_t prepare_panoptic_fpn(const std::string& panoptic_json, const std::string& panoptic_root,
                            const std::string& output_dir,
                            const PreparePanopticOptions& options = {});

}  // namespace detkit::data
