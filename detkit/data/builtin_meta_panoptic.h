#pragma once
// Metadata of the built-in COCO panoptic names (Detectron2's builtin_meta.py,
// _get_coco_panoptic_separated_meta and "coco_panoptic_standard"), and of the shapes on stuff.
// Internal to detkit/data.
#include <string>
#include <vector>

#include "detkit/data/coco/panoptic_dataset.h"
#include "detkit/data/metadata.h"

namespace detkit::data {

/// True for the nine built-in names coco_2017_{train,val,val_100}_panoptic[_separated|_stuffonly].
bool is_builtin_coco_panoptic(const std::string& name);

/// Fills `m` (holding COCO's 80 things already) for a built-in panoptic name: its stuff classes
/// (COCO's 53 stuff categories), evaluator type, ignore label and label divisor.
void fill_builtin_coco_panoptic(const std::string& name, Metadata& m);

/// True for the six built-in names shapes_{train,val}_panoptic[_separated|_stuffonly].
bool is_builtin_shapes_panoptic(const std::string& name);

/// Fills `m` (holding the three shapes already) for a built-in shapes panoptic name: the stuff
/// textures (stripes, checks, grain), evaluator type, ignore label and label divisor.
void fill_builtin_shapes_panoptic(const std::string& name, Metadata& m);

/// The stuff classes a panoptic file's categories give (sorted by id): "separated", Detectron2's
/// semantic labels: "things" (id 0) then the stuff categories; "standard": every category.
void set_stuff_from_categories(Metadata& m, const std::vector<PanopticCategory>& categories,
                               bool separated);

}  // namespace detkit::data
