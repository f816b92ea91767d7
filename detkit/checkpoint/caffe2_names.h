#pragma once
// Caffe2 / Detectron1 blob names under Detectron2's names, as Detectron2's
// convert_c2_detectron_names renames them: conv1_w -> stem.conv1.weight, res_conv1_bn_s ->
// stem.conv1.norm.weight, res2_0_branch2a_w -> res2.0.conv1.weight, branch1 -> shortcut,
// _bn_{s,b,rm,riv} -> .norm.{weight,bias,running_mean,running_var}, FPN, RPN, fc6/fc7, box
// predictor, mask and keypoint heads. The names are still relative (the matching heuristics find
// where they belong in the model).
#include <map>
#include <string>

#include "detkit/checkpoint/state_dict.h"

namespace detkit::checkpoint {

/// The Detectron2 name of one Caffe2 blob name. Throws detkit::Error for an FPN name whose
/// stage is not a number.
std::string caffe2_to_detectron2_name(const std::string& caffe2_name);

struct RenamedWeights {
  TensorDict weights;                           // by Detectron2 name
  std::map<std::string, std::string> original;  // Detectron2 name -> Caffe2 name
};

/// Every tensor renamed; the class-specific predictors changed as Detectron2 does: cls_score's
/// background row moves from first to last, bbox_pred drops the background's 4 deltas,
/// mask_head.predictor drops the background mask. Throws when two names become one.
RenamedWeights convert_caffe2_detectron_names(const TensorDict& weights);

}  // namespace detkit::checkpoint
