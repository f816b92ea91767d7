#pragma once
// numpy's float64 sum and mean, to the last bit: the reference evaluators (lvis-api, Detectron2's
// SemSegEvaluator and voc_eval) average with numpy, and detkit's numbers equal theirs exactly.
#include <cstddef>
#include <vector>

namespace detkit::evaluation {

/// numpy's pairwise summation of a contiguous float64 run (add.reduce's inner loop: 8 partial
/// sums in blocks of 128, halves above that).
double numpy_pairwise_sum(const double* values, size_t n);

/// np.sum(values) / np.add.reduce: 0 + the pairwise sums of blocks of numpy's buffer size (8192
/// values), the blocks added one after the other.
double numpy_sum(const std::vector<double>& values);

/// np.mean(values): numpy_sum over the count (NaN for no value, as numpy's 0 / 0).
double numpy_mean(const std::vector<double>& values);

}  // namespace detkit::evaluation
