#include "detkit/modeling/sampling.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

namespace detkit::modeling {

SampledIndices subsample_labels(const at::Tensor& labels, int64_t num_samples,
                                double positive_fraction, int64_t bg_label,
                                c10::optional<at::Generator> generator) {
  TORCH_CHECK(labels.dim() == 1, "subsample_labels: labels must be (N), got ", labels.sizes());
  TORCH_CHECK(num_samples >= 0, "subsample_labels: num_samples must be >= 0, got ", num_samples);
  TORCH_CHECK(positive_fraction >= 0 && positive_fraction <= 1,
              "subsample_labels: positive_fraction must be in [0, 1], got ", positive_fraction);
  const at::Tensor positive =
      at::nonzero((labels != -1).logical_and_(labels != bg_label)).select(1, 0);
  const at::Tensor negative = at::nonzero(labels == bg_label).select(1, 0);

  // int() in Python truncates toward zero, as this cast does.
  const int64_t num_pos =
      std::min(positive.numel(), static_cast<int64_t>(num_samples * positive_fraction));
  const int64_t num_neg = std::min(negative.numel(), num_samples - num_pos);

  // The permutations are drawn on the host, from `generator` (the per-image ones are CPU
  // generators) or the default CPU generator, so that labels on a GPU sample what they would on
  // the CPU; only the chosen indices move to the labels' device.
  const at::TensorOptions index_options = at::TensorOptions().dtype(at::kLong);
  const at::Tensor perm_pos = at::randperm(positive.numel(), generator, index_options)
                                  .slice(0, 0, num_pos)
                                  .to(labels.device());
  const at::Tensor perm_neg = at::randperm(negative.numel(), generator, index_options)
                                  .slice(0, 0, num_neg)
                                  .to(labels.device());
  return {positive.index_select(0, perm_pos), negative.index_select(0, perm_neg)};
}

namespace {
thread_local const ImageGenerators* innermost = nullptr;
}  // namespace

ImageGenerators::ImageGenerators(const std::vector<structures::ModelInput>& batch)
    : enclosing_(innermost) {
  for (const auto& input : batch) {
    if (input.sampling_seed)
      generators_.emplace_back(at::detail::createCPUGenerator(*input.sampling_seed));
    else
      generators_.emplace_back(c10::nullopt);
  }
  innermost = this;
}

ImageGenerators::~ImageGenerators() { innermost = enclosing_; }

c10::optional<at::Generator> ImageGenerators::get(size_t image) const {
  return image < generators_.size() ? generators_[image] : c10::nullopt;
}

c10::optional<at::Generator> image_generator(size_t image) {
  return innermost ? innermost->get(image) : c10::nullopt;
}

}  // namespace detkit::modeling
