#pragma once
// Matcher: assigns each prediction (anchor, proposal) at most one ground-truth element from a
// match-quality (IoU) matrix, as Detectron2's detectron2/modeling/matcher.py.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace detkit::modeling {

/// matches: (N) int64, the best ground truth of each prediction (0 when there is none).
/// match_labels: (N) int8, 1 = positive, 0 = negative, -1 = ignored.
struct MatchResult {
  at::Tensor matches;
  at::Tensor match_labels;
};

class Matcher {
 public:
  /// thresholds: ascending, the first > 0; they cut quality into len(thresholds) + 1 intervals
  /// [-inf, t0), [t0, t1), ..., [t_last, inf), and labels (each -1, 0 or 1) names each interval.
  /// E.g. thresholds (0.3, 0.7), labels (0, -1, 1): IoU < 0.3 negative, [0.3, 0.7) ignored,
  /// >= 0.7 positive. allow_low_quality_matches: also label 1 every prediction whose quality
  /// with some ground truth equals that ground truth's best (ties included), as the RPN does.
  Matcher(std::vector<double> thresholds, std::vector<int64_t> labels,
          bool allow_low_quality_matches = false);

  /// match_quality_matrix: (M, N) quality >= 0 of M ground-truth elements against N predictions.
  /// When it is empty (no ground truth or no prediction): all matches 0, all labels labels[0].
  MatchResult operator()(const at::Tensor& match_quality_matrix) const;

  /// The thresholds with -inf and +inf added at the ends.
  const std::vector<double>& thresholds() const { return thresholds_; }
  const std::vector<int64_t>& labels() const { return labels_; }
  bool allow_low_quality_matches() const { return allow_low_quality_matches_; }

 private:
  // For each ground truth, labels 1 the predictions of its best quality (including ties), even
  // when that quality is low. match_labels: (N) int8, updated in place.
  void set_low_quality_matches(at::Tensor& match_labels,
                               const at::Tensor& match_quality_matrix) const;

  std::vector<double> thresholds_;
  std::vector<int64_t> labels_;
  bool allow_low_quality_matches_;
};

}  // namespace detkit::modeling
