#pragma once
// Detectron2's load_sem_seg: a semantic-segmentation dataset made of two folders, the images and
// their label maps, paired by file stem (the "_stuffonly" names of register_coco_panoptic_separated
// load this way). The records are a CocoDataset of images without annotations or categories, each
// with its label map (sem_seg_path), so they go through the same sampler, mapper and loader.
#include <string>

#include "detkit/data/coco/coco_dataset.h"

namespace detkit::data {

/// Every "<stem>.jpg" directly under `image_root` that has a "<stem>.png" directly under
/// `gt_root`, sorted by stem; image ids 0, 1, ... in that order; each image's size read from its
/// label map's PNG header (a label map has its image's size: the mapper checks the decoded image
/// against it). When the folders hold different numbers of files, Detectron2's warning, and their
/// intersection is used. Errors (detkit::Error, naming the folder or file): a folder that is
/// missing, no PNG in `gt_root`, no pair at all, a label map whose header is not a PNG's.
///
/// Detectron2 pairs the two sorted lists position by position when their lengths are equal; here
/// files always pair by stem, so a stray file cannot shift every pair after it.
CocoDataset load_sem_seg(const std::string& gt_root, const std::string& image_root);

}  // namespace detkit::data
