#include "detkit/modeling/roi_heads/poolers.h"

#include <ATen/ATen.h>

#include <cmath>

#include "detkit/ops/roi_align.h"
#include "detkit/utils/error.h"

namespace detkit::modeling {

at::Tensor assign_boxes_to_levels(const std::vector<structures::Boxes>& boxes, int64_t min_level,
                                  int64_t max_level, int64_t canonical_box_size,
                                  int64_t canonical_level) {
  std::vector<at::Tensor> areas;
  for (const auto& b : boxes) areas.push_back(b.area());
  at::Tensor sizes = at::cat(areas).sqrt();
  at::Tensor levels = at::floor(canonical_level + at::log2(sizes / canonical_box_size + 1e-8));
  return (levels.clamp(min_level, max_level) - min_level).to(at::kLong);
}

ROIPooler::ROIPooler(ROIPoolerOptions o) : options_(std::move(o)) {
  if (options_.pooler_type == "ROIAlign")
    aligned_ = false;
  else if (options_.pooler_type == "ROIAlignV2")
    aligned_ = true;
  else
    throw Error("unknown pooler type '" + options_.pooler_type + "' (ROIAlign, ROIAlignV2)");
  if (options_.scales.empty()) throw Error("ROIPooler needs at least one feature level");
  double min_level = -std::log2(options_.scales.front());
  double max_level = -std::log2(options_.scales.back());
  if (min_level != std::round(min_level) || max_level != std::round(max_level))
    throw Error("ROIPooler: feature strides must be powers of 2");
  min_level_ = std::lround(min_level);
  max_level_ = std::lround(max_level);
  if (max_level_ - min_level_ + 1 != static_cast<int64_t>(options_.scales.size()))
    throw Error("ROIPooler: feature strides must be consecutive powers of 2");
}

at::Tensor ROIPooler::operator()(const std::vector<at::Tensor>& features,
                                 const std::vector<structures::Boxes>& boxes) const {
  TORCH_CHECK(features.size() == options_.scales.size(), "ROIPooler: expected ",
              options_.scales.size(), " feature levels, got ", features.size());
  TORCH_CHECK(static_cast<int64_t>(boxes.size()) == features[0].size(0),
              "ROIPooler: ", boxes.size(), " box lists for a batch of ", features[0].size(0));
  std::vector<at::Tensor> rois;
  for (size_t i = 0; i < boxes.size(); ++i) {
    const at::Tensor& b = boxes[i].tensor();
    rois.push_back(at::cat({at::full({b.size(0), 1}, static_cast<double>(i), b.options()), b}, 1));
  }
  at::Tensor all = at::cat(rois);
  const int64_t s = options_.output_size;
  if (features.size() == 1)
    return ops::roi_align(features[0], all, options_.scales[0], s, s, options_.sampling_ratio,
                          aligned_);
  at::Tensor levels = assign_boxes_to_levels(boxes, min_level_, max_level_,
                                             options_.canonical_box_size, options_.canonical_level);
  // One op pools every box from its level straight into its row: pooling each level apart and
  // gathering the rows back into box order copied the pooled features twice forward and once
  // backward (51 MB each for a training batch's box features).
  return ops::multilevel_roi_align(features, all, levels, options_.scales, s, s,
                                   options_.sampling_ratio, aligned_);
}

ROIPoolerOptions pooler_options_from_config(const config::CfgNode& cfg, const std::string& head,
                                            const std::vector<int64_t>& strides) {
  ROIPoolerOptions o;
  o.output_size = cfg.get_int("MODEL." + head + ".POOLER_RESOLUTION");
  o.sampling_ratio = cfg.get_int("MODEL." + head + ".POOLER_SAMPLING_RATIO");
  o.pooler_type = cfg.get_string("MODEL." + head + ".POOLER_TYPE");
  for (int64_t stride : strides) o.scales.push_back(1.0 / static_cast<double>(stride));
  return o;
}

}  // namespace detkit::modeling
