#pragma once
// ROIPooler: pools a fixed-size feature for each box from the FPN level its size selects
// (canonical box size 224 at level 4), with ROIAlign (aligned = false) or ROIAlignV2
// (aligned = true), as Detectron2's poolers.py.
#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "detkit/config/cfg_node.h"
#include "detkit/structures/boxes.h"

namespace detkit::modeling {

struct ROIPoolerOptions {
  int64_t output_size = 7;
  std::vector<double> scales;  // 1 / stride of each input level, finest first
  int64_t sampling_ratio = 0;
  std::string pooler_type = "ROIAlignV2";  // or "ROIAlign"
  int64_t canonical_box_size = 224;
  int64_t canonical_level = 4;
};

/// Level index (0 = finest) for every box of every image, concatenated.
at::Tensor assign_boxes_to_levels(const std::vector<structures::Boxes>& boxes, int64_t min_level,
                                  int64_t max_level, int64_t canonical_box_size,
                                  int64_t canonical_level);

class ROIPooler {
 public:
  explicit ROIPooler(ROIPoolerOptions options);
  /// features: one (N, C, Hl, Wl) map per level; boxes: per image, in input-image pixels.
  /// Returns (sum of boxes, C, output_size, output_size), boxes in image order.
  at::Tensor operator()(const std::vector<at::Tensor>& features,
                        const std::vector<structures::Boxes>& boxes) const;
  const ROIPoolerOptions& options() const { return options_; }

 private:
  ROIPoolerOptions options_;
  bool aligned_;
  int64_t min_level_, max_level_;
};

/// "ROIAlign" / "ROIAlignV2" pooler from MODEL.<head>.POOLER_* keys (head "ROI_BOX_HEAD" or
/// "ROI_MASK_HEAD") for the given feature strides.
ROIPoolerOptions pooler_options_from_config(const config::CfgNode& cfg, const std::string& head,
                                            const std::vector<int64_t>& strides);

}  // namespace detkit::modeling
