#pragma once
// A narrow Mask R-CNN (R-50-FPN layout, widths of 8..256, 3 classes) and a batch of two random
// 64x96 images with two boxes each: big enough to exercise every code path, fast on a CPU.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <string>
#include <vector>

#include "detkit/config/defaults.h"
#include "detkit/modeling/meta_arch/generalized_rcnn.h"

namespace detkit::testing {

inline config::CfgNode small_config(const std::vector<std::string>& overrides = {}) {
  config::CfgNode cfg = config::get_cfg();
  cfg.merge_from_file(std::string(DETKIT_SOURCE_DIR) + "/configs/Base-RCNN-FPN.yaml");
  // clang-format off
  cfg.merge_from_list({
      "MODEL.DEVICE", "cpu", "MODEL.MASK_ON", "True",
      "MODEL.RESNETS.STEM_OUT_CHANNELS", "8", "MODEL.RESNETS.WIDTH_PER_GROUP", "8",
      "MODEL.RESNETS.RES2_OUT_CHANNELS", "32", "MODEL.FPN.OUT_CHANNELS", "32",
      "MODEL.ROI_BOX_HEAD.FC_DIM", "32", "MODEL.ROI_MASK_HEAD.CONV_DIM", "16",
      "MODEL.ROI_HEADS.NUM_CLASSES", "3", "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE", "32",
      "MODEL.RPN.BATCH_SIZE_PER_IMAGE", "32",
      "MODEL.RPN.PRE_NMS_TOPK_TRAIN", "200", "MODEL.RPN.POST_NMS_TOPK_TRAIN", "50",
      "MODEL.RPN.PRE_NMS_TOPK_TEST", "200", "MODEL.RPN.POST_NMS_TOPK_TEST", "50",
      // Keep every detection so the mask head also runs at inference with random weights.
      "MODEL.ROI_HEADS.SCORE_THRESH_TEST", "0.0", "TEST.DETECTIONS_PER_IMAGE", "10",
  });
  // clang-format on
  cfg.merge_from_list(overrides);
  return cfg;
}

/// Two random 3x64x96 images (pixel values 0..255), each with two boxes of classes 0 and 2 and
/// rectangular polygon masks.
inline std::vector<modeling::ModelInput> small_batch(uint64_t seed = 0) {
  auto gen = at::detail::createCPUGenerator(seed);
  std::vector<modeling::ModelInput> batch(2);
  for (int i = 0; i < 2; ++i) {
    auto& input = batch[i];
    input.image = at::rand({3, 64, 96}, gen) * 255;
    input.height = 64;
    input.width = 96;
    const std::vector<std::vector<double>> boxes = {{4.0 + i, 6, 40, 50},
                                                    {30, 10.0 + 2 * i, 90, 60}};
    std::vector<float> flat;
    std::vector<std::vector<structures::Polygon>> polygons;
    for (const auto& b : boxes) {
      flat.insert(flat.end(), b.begin(), b.end());
      polygons.push_back({{b[0], b[1], b[2], b[1], b[2], b[3], b[0], b[3]}});
    }
    structures::Instances targets(64, 96);
    targets.set("gt_boxes", structures::Boxes(at::tensor(flat).reshape({-1, 4})));
    targets.set("gt_classes", at::tensor(std::vector<int64_t>{0, 2}, at::kLong));
    targets.set("gt_masks", structures::PolygonMasks(polygons));
    input.instances = targets;
  }
  return batch;
}

}  // namespace detkit::testing
