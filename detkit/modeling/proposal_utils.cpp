#include "detkit/modeling/proposal_utils.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "detkit/ops/batched_nms.h"
#include "detkit/utils/error.h"

namespace detkit::modeling {
namespace {

// The top-k of every level, concatenated over levels.
struct LevelTopK {
  at::Tensor boxes;      // (N, K, 4), K = sum over levels of min(Hi * Wi * A, pre_nms_topk)
  at::Tensor scores;     // (N, K) logits, each level's part by decreasing logit
  at::Tensor level_ids;  // (K) int64 level of each column
};

LevelTopK select_top_per_level(const std::vector<at::Tensor>& proposals,
                               const std::vector<at::Tensor>& logits, int64_t num_images,
                               int64_t pre_nms_topk) {
  std::vector<at::Tensor> boxes, scores, level_ids;
  for (size_t level = 0; level < proposals.size(); ++level) {
    const at::Tensor& proposals_i = proposals[level];
    const at::Tensor& logits_i = logits[level];
    TORCH_CHECK(logits_i.dim() == 2 && logits_i.size(0) == num_images,
                "find_top_rpn_proposals: logits of level ", level, " must be (", num_images,
                ", Hi*Wi*A), got ", logits_i.sizes());
    TORCH_CHECK(proposals_i.dim() == 3 && proposals_i.size(0) == num_images &&
                    proposals_i.size(1) == logits_i.size(1) && proposals_i.size(2) == 4,
                "find_top_rpn_proposals: proposals of level ", level, " must be (", num_images,
                ", ", logits_i.size(1), ", 4), got ", proposals_i.sizes());
    const int64_t k = std::min(logits_i.size(1), pre_nms_topk);
    auto [top_scores, top_idx] = logits_i.topk(k, /*dim=*/1);  // (N, k), sorted
    boxes.push_back(proposals_i.gather(1, top_idx.unsqueeze(2).expand({num_images, k, 4})));
    scores.push_back(top_scores);
    level_ids.push_back(
        at::full({k}, static_cast<int64_t>(level), logits_i.options().dtype(at::kLong)));
  }
  return {at::cat(boxes, 1), at::cat(scores, 1), at::cat(level_ids, 0)};
}

}  // namespace

std::vector<structures::Instances> find_top_rpn_proposals(
    const std::vector<at::Tensor>& proposals, const std::vector<at::Tensor>& pred_objectness_logits,
    const std::vector<std::pair<int64_t, int64_t>>& image_sizes, double nms_thresh,
    int64_t pre_nms_topk, int64_t post_nms_topk, double min_box_size, bool training) {
  TORCH_CHECK(!proposals.empty() && proposals.size() == pred_objectness_logits.size(),
              "find_top_rpn_proposals: need as many proposal levels as logit levels (>= 1), got ",
              proposals.size(), " and ", pred_objectness_logits.size());
  TORCH_CHECK(pre_nms_topk >= 0 && post_nms_topk >= 0,
              "find_top_rpn_proposals: top-k values must be >= 0, got ", pre_nms_topk, " and ",
              post_nms_topk);
  const auto num_images = static_cast<int64_t>(image_sizes.size());
  const LevelTopK top =
      select_top_per_level(proposals, pred_objectness_logits, num_images, pre_nms_topk);

  std::vector<structures::Instances> results;
  for (int64_t n = 0; n < num_images; ++n) {
    const auto [height, width] = image_sizes[n];
    structures::Boxes boxes(top.boxes[n]);
    at::Tensor scores = top.scores[n];
    at::Tensor levels = top.level_ids;

    const at::Tensor valid =
        at::isfinite(boxes.tensor()).all(/*dim=*/1).logical_and_(at::isfinite(scores));
    if (!valid.all().item<bool>()) {
      if (training) {
        throw Error("Predicted boxes or scores contain Inf/NaN. Training has diverged.");
      }
      boxes = boxes.index(valid);
      scores = scores.index({valid});
      levels = levels.index({valid});
    }
    boxes.clip(height, width);

    const at::Tensor nonempty = boxes.nonempty(min_box_size);
    if (!nonempty.all().item<bool>()) {
      boxes = boxes.index(nonempty);
      scores = scores.index({nonempty});
      levels = levels.index({nonempty});
    }

    // Kept indices by decreasing score, so the first post_nms_topk are the best.
    at::Tensor keep = ops::batched_nms(boxes.tensor(), scores, levels, nms_thresh);
    keep = keep.slice(0, 0, post_nms_topk);

    structures::Instances result(height, width);
    result.set("proposal_boxes", boxes.index(keep));
    result.set("objectness_logits", scores.index_select(0, keep));
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace detkit::modeling
