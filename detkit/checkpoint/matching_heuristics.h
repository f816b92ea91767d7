#pragma once
// Detectron2's align_and_update_state_dicts: fits a checkpoint whose names are relative (Caffe2
// ImageNet backbones: "res2.0.conv1.weight") or otherwise differ from the model's onto the
// model's names ("backbone.bottom_up.res2.0.conv1.weight"). Used when the file asks for it
// (matching_heuristics) and for every Caffe2 file.
#include <map>
#include <string>

#include "detkit/checkpoint/state_dict.h"

namespace detkit::checkpoint {

/// Each model key takes the checkpoint key that is its longest dot-bounded suffix (equal, or
/// ending with "." + key). Shape mismatches are skipped with a warning; one checkpoint key that
/// would fill two model keys is an error naming both. Returns the matched tensors under model
/// names plus the unmatched checkpoint tensors under their own names (reported later as
/// unexpected). `original` names each checkpoint key in the file (for the log), may be empty.
TensorDict align_to_model(const TensorDict& model, const TensorDict& checkpoint,
                          const std::map<std::string, std::string>& original = {});

}  // namespace detkit::checkpoint
