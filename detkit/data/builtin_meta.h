#pragma once
// Metadata of the built-in dataset names (Detectron2's data/datasets/builtin_meta.py): COCO's 80
// things for coco_* and lvis_v0.5_*_cocofied (and COCO's 53 stuff classes for the built-in panoptic
// names), the person class with its 17 keypoints and flip map for keypoints_coco_*, the three
// shapes for shapes_train / shapes_val.
#include <optional>
#include <string>

#include "detkit/data/metadata.h"

namespace detkit::data {

/// The metadata of a built-in name; nullopt for any other name.
std::optional<Metadata> builtin_metadata(const std::string& name);

}  // namespace detkit::data
