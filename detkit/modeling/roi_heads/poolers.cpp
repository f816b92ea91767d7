#include "detkit/modeling/roi_heads/poolers.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include <cmath>

#include "detkit/ops/roi_align.h"
#include "detkit/utils/error.h"

namespace detkit::modeling {
namespace {

/// rows.index_select(0, position), where `position` is a permutation whose inverse is `inverse`:
/// the gradient is grad.index_select(0, inverse), one gather. index_select's own backward zeroes
/// a tensor of the rows' size and scatters into it (index_add_), which for a training batch's box
/// features (51 MB) took 37 ms per call, most of it faulting in the fresh zeroed pages.
class PermuteRows : public torch::autograd::Function<PermuteRows> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const at::Tensor& rows, const at::Tensor& position,
                                                const at::Tensor& inverse) {
    ctx->save_for_backward({inverse});
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return {rows.index_select(0, position)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 const torch::autograd::variable_list& grad) {
    return {grad[0].index_select(0, ctx->get_saved_variables()[0]), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

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
  const int64_t s = options_.output_size, channels = features[0].size(1);
  auto pool = [&](size_t level, const at::Tensor& r) {
    return ops::roi_align(features[level], r, options_.scales[level], s, s, options_.sampling_ratio,
                          aligned_);
  };
  if (features.size() == 1) return pool(0, all);
  at::Tensor levels = assign_boxes_to_levels(boxes, min_level_, max_level_,
                                             options_.canonical_box_size, options_.canonical_level);
  // Pool each level's boxes, then put the rows back in box order with one row gather both ways
  // (index_put_ into a zeroed output took ~16 ms per call for a training batch's box features).
  std::vector<at::Tensor> order, pooled;
  for (size_t level = 0; level < features.size(); ++level) {
    at::Tensor inds = (levels == static_cast<int64_t>(level)).nonzero().select(1, 0);
    if (inds.numel() == 0) continue;
    order.push_back(inds);
    pooled.push_back(pool(level, all.index_select(0, inds)));
  }
  if (pooled.empty()) return at::zeros({0, channels, s, s}, features[0].options());
  const at::Tensor box_of_row = at::cat(order);
  return PermuteRows::apply(at::cat(pooled), at::argsort(box_of_row), box_of_row)[0];
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
