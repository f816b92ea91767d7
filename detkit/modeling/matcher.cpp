#include "detkit/modeling/matcher.h"

#include <ATen/ATen.h>

#include <limits>
#include <sstream>
#include <string>

#include "detkit/utils/error.h"

namespace detkit::modeling {
namespace {

template <typename T>
std::string to_string(const std::vector<T>& values) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "]";
  return out.str();
}

}  // namespace

Matcher::Matcher(std::vector<double> thresholds, std::vector<int64_t> labels,
                 bool allow_low_quality_matches)
    : labels_(std::move(labels)), allow_low_quality_matches_(allow_low_quality_matches) {
  const std::string given =
      "thresholds " + to_string(thresholds) + ", labels " + to_string(labels_);
  if (thresholds.empty() || !(thresholds.front() > 0)) {
    throw Error("Matcher: the first threshold must be > 0; got " + given);
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  thresholds_.push_back(-kInf);
  thresholds_.insert(thresholds_.end(), thresholds.begin(), thresholds.end());
  thresholds_.push_back(kInf);
  for (size_t i = 1; i < thresholds_.size(); ++i) {
    if (!(thresholds_[i - 1] <= thresholds_[i])) {
      throw Error("Matcher: thresholds must be ascending; got " + given);
    }
  }
  for (int64_t label : labels_) {
    if (label < -1 || label > 1) throw Error("Matcher: labels must be -1, 0 or 1; got " + given);
  }
  if (labels_.size() != thresholds.size() + 1) {
    throw Error("Matcher: need one label more than thresholds; got " + given);
  }
}

MatchResult Matcher::operator()(const at::Tensor& match_quality_matrix) const {
  TORCH_CHECK(match_quality_matrix.dim() == 2, "Matcher: the quality matrix must be (M, N), got ",
              match_quality_matrix.sizes());
  const int64_t num_predictions = match_quality_matrix.size(1);
  const at::TensorOptions options = match_quality_matrix.options();
  if (match_quality_matrix.numel() == 0) {
    // No ground truth: every prediction has quality 0, hence the lowest interval's label.
    return {at::zeros({num_predictions}, options.dtype(at::kLong)),
            at::full({num_predictions}, labels_.front(), options.dtype(at::kChar))};
  }
  TORCH_CHECK((match_quality_matrix >= 0).all().item<bool>(),
              "Matcher: match qualities must be >= 0 (and not NaN)");

  // Best ground truth for each prediction: (N) values and indices.
  auto [matched_vals, matches] = match_quality_matrix.max(/*dim=*/0);
  at::Tensor match_labels = at::ones({num_predictions}, options.dtype(at::kChar));
  for (size_t i = 0; i < labels_.size(); ++i) {
    const at::Tensor in_interval =
        (matched_vals >= thresholds_[i]).logical_and_(matched_vals < thresholds_[i + 1]);
    match_labels.masked_fill_(in_interval, labels_[i]);
  }
  if (allow_low_quality_matches_) set_low_quality_matches(match_labels, match_quality_matrix);
  return {matches, match_labels};
}

void Matcher::set_low_quality_matches(at::Tensor& match_labels,
                                      const at::Tensor& match_quality_matrix) const {
  // (M) best quality of each ground truth; then every (gt, prediction) pair reaching it.
  const at::Tensor highest_quality_foreach_gt = std::get<0>(match_quality_matrix.max(/*dim=*/1));
  const at::Tensor pairs =
      at::nonzero(match_quality_matrix == highest_quality_foreach_gt.unsqueeze(1));
  match_labels.index_fill_(0, pairs.select(1, 1), 1);
}

}  // namespace detkit::modeling
