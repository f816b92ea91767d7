#include "detkit/config/unimplemented.h"

#include "detkit/config/defaults.h"
#include "detkit/utils/error.h"

namespace detkit::config {

const std::vector<UnimplementedKey>& unimplemented_keys() {
  static const std::vector<UnimplementedKey> keys = {
      {"TEST.AUG.ENABLED", "test-time augmentation"},
      {"MODEL.ROI_BOX_HEAD.TRAIN_ON_PRED_BOXES", "training the mask head on predicted boxes"},
      {"FLOAT32_PRECISION", "reduced fp32 matmul/convolution precision (TF32 on CUDA)"},
      {"TEST.EXPECTED_RESULTS", "checking evaluation results against expected values"},
      {"VERSION",
       "another config VERSION set in code or on the command line (a YAML file's VERSION 0 or 1 "
       "is read by upgrading its keys)"},
  };
  return keys;
}

void check_implemented(const CfgNode& cfg) {
  static const CfgNode defaults = get_cfg();
  for (const auto& [key, feature] : unimplemented_keys()) {
    const CfgValue& value = cfg.get(key);
    if (value != defaults.get(key))
      throw Error(key + " is " + value.repr() + ", but detkit does not implement " + feature +
                  " yet; leave it at Detectron2's default " + defaults.get(key).repr());
  }
}

}  // namespace detkit::config
