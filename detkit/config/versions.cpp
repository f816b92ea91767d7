#include "detkit/config/versions.h"

namespace detkit::config {

const std::vector<KeyRename>& config_key_renames() {
  static const std::vector<KeyRename> renames = {
      {1, "MODEL.RPN_HEAD.NAME", "MODEL.RPN.HEAD_NAME"},
      {2, "MODEL.WEIGHT", "MODEL.WEIGHTS"},
      {2, "MODEL.PANOPTIC_FPN.SEMANTIC_LOSS_SCALE", "MODEL.SEM_SEG_HEAD.LOSS_WEIGHT"},
      {2, "MODEL.PANOPTIC_FPN.RPN_LOSS_SCALE", "MODEL.RPN.LOSS_WEIGHT"},
      {2, "MODEL.PANOPTIC_FPN.INSTANCE_LOSS_SCALE", "MODEL.PANOPTIC_FPN.INSTANCE_LOSS_WEIGHT"},
      {2, "MODEL.PANOPTIC_FPN.COMBINE_ON", "MODEL.PANOPTIC_FPN.COMBINE.ENABLED"},
      {2, "MODEL.PANOPTIC_FPN.COMBINE_OVERLAP_THRESHOLD",
       "MODEL.PANOPTIC_FPN.COMBINE.OVERLAP_THRESH"},
      {2, "MODEL.PANOPTIC_FPN.COMBINE_STUFF_AREA_LIMIT",
       "MODEL.PANOPTIC_FPN.COMBINE.STUFF_AREA_LIMIT"},
      {2, "MODEL.PANOPTIC_FPN.COMBINE_INSTANCES_CONFIDENCE_THRESHOLD",
       "MODEL.PANOPTIC_FPN.COMBINE.INSTANCES_CONFIDENCE_THRESH"},
      {2, "MODEL.ROI_HEADS.SCORE_THRESH", "MODEL.ROI_HEADS.SCORE_THRESH_TEST"},
      {2, "MODEL.ROI_HEADS.NMS", "MODEL.ROI_HEADS.NMS_THRESH_TEST"},
      {2, "MODEL.RETINANET.INFERENCE_SCORE_THRESHOLD", "MODEL.RETINANET.SCORE_THRESH_TEST"},
      {2, "MODEL.RETINANET.INFERENCE_TOPK_CANDIDATES", "MODEL.RETINANET.TOPK_CANDIDATES_TEST"},
      {2, "MODEL.RETINANET.INFERENCE_NMS_THRESHOLD", "MODEL.RETINANET.NMS_THRESH_TEST"},
      {2, "TEST.DETECTIONS_PER_IMG", "TEST.DETECTIONS_PER_IMAGE"},
      {2, "TEST.AUG_ON", "TEST.AUG.ENABLED"},
      {2, "TEST.AUG_MIN_SIZES", "TEST.AUG.MIN_SIZES"},
      {2, "TEST.AUG_MAX_SIZE", "TEST.AUG.MAX_SIZE"},
      {2, "TEST.AUG_FLIP", "TEST.AUG.FLIP"},
  };
  return renames;
}

std::string upgrade_key(std::string key, int version) {
  for (const KeyRename& rename : config_key_renames())
    if (rename.version > version && key == rename.old_name) key = rename.new_name;
  return key;
}

namespace {

// (family prefix, old suffix, new key)
struct OldAnchorKey {
  const char* family;
  const char* suffix;
  const char* new_key;
};
constexpr OldAnchorKey kOldAnchorKeys[] = {
    {"MODEL.RPN.", "ANCHOR_SIZES", "MODEL.ANCHOR_GENERATOR.SIZES"},
    {"MODEL.RPN.", "ANCHOR_ASPECT_RATIOS", "MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS"},
    {"MODEL.RETINANET.", "ANCHOR_SIZES", "MODEL.ANCHOR_GENERATOR.SIZES"},
    {"MODEL.RETINANET.", "ANCHOR_ASPECT_RATIOS", "MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS"},
};

}  // namespace

bool is_old_anchor_key(const std::string& key) {
  for (const OldAnchorKey& old : kOldAnchorKeys)
    if (key == std::string(old.family) + old.suffix) return true;
  return false;
}

std::string upgraded_anchor_key(const std::string& key, const std::string& meta_architecture) {
  const std::string family = meta_architecture == "RetinaNet" ? "MODEL.RETINANET." : "MODEL.RPN.";
  for (const OldAnchorKey& old : kOldAnchorKeys) {
    if (key != std::string(old.family) + old.suffix) continue;
    return family == old.family ? old.new_key : "";
  }
  return key;
}

}  // namespace detkit::config
