#pragma once
// subsample_labels: the random positive / negative sampling of anchors (RPN) and proposals
// (ROI heads), as Detectron2's detectron2/modeling/sampling.py.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <cstdint>
#include <vector>

#include "detkit/structures/model_io.h"

namespace detkit::modeling {

/// Indices into the labels vector, int64, in random order.
struct SampledIndices {
  at::Tensor pos_idx;  // (P) positives chosen
  at::Tensor neg_idx;  // (Q) negatives chosen, P + Q <= num_samples
};

/// labels: (N) integer, -1 = ignore, bg_label = negative, anything else = positive.
/// Chooses P = min(#positives, int(num_samples * positive_fraction)) positives and
/// Q = min(#negatives, num_samples - P) negatives uniformly at random (torch.randperm on
/// `generator`, or on the default CPU generator when none is given; on the host whatever the
/// labels' device, the indices returned on it), so a short supply of positives is made up with
/// negatives.
SampledIndices subsample_labels(const at::Tensor& labels, int64_t num_samples,
                                double positive_fraction, int64_t bg_label,
                                c10::optional<at::Generator> generator = c10::nullopt);

/// For its lifetime, on this thread: image i of `batch` draws its samples (image_generator(i))
/// from a generator of its own, seeded with batch[i].sampling_seed and shared by the stages that
/// sample for it (the RPN's anchors, then the ROI heads' proposals), so that what is drawn for an
/// image does not depend on the images batched with it. Scopes nest; not copyable.
class ImageGenerators {
 public:
  explicit ImageGenerators(const std::vector<structures::ModelInput>& batch);
  ~ImageGenerators();
  ImageGenerators(const ImageGenerators&) = delete;
  ImageGenerators& operator=(const ImageGenerators&) = delete;
  c10::optional<at::Generator> get(size_t image) const;

 private:
  std::vector<c10::optional<at::Generator>> generators_;
  const ImageGenerators* enclosing_;
};

/// Image `image`'s generator in this thread's innermost ImageGenerators scope; nullopt (draw
/// from the default generator, image after image, as Detectron2) outside a scope or for an image
/// without a sampling seed.
c10::optional<at::Generator> image_generator(size_t image);

}  // namespace detkit::modeling
