#pragma once
// subsample_labels: the random positive / negative sampling of anchors (RPN) and proposals
// (ROI heads), as Detectron2's detectron2/modeling/sampling.py.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <cstdint>

namespace detkit::modeling {

/// Indices into the labels vector, int64, in random order.
struct SampledIndices {
  at::Tensor pos_idx;  // (P) positives chosen
  at::Tensor neg_idx;  // (Q) negatives chosen, P + Q <= num_samples
};

/// labels: (N) integer, -1 = ignore, bg_label = negative, anything else = positive.
/// Chooses P = min(#positives, int(num_samples * positive_fraction)) positives and
/// Q = min(#negatives, num_samples - P) negatives uniformly at random (torch.randperm on
/// `generator`, or on the default generator when none is given), so a short supply of
/// positives is made up with negatives.
SampledIndices subsample_labels(const at::Tensor& labels, int64_t num_samples,
                                double positive_fraction, int64_t bg_label,
                                c10::optional<at::Generator> generator = c10::nullopt);

}  // namespace detkit::modeling
