#include "detkit/data/samplers/aspect_ratio_grouping.h"

#include "detkit/utils/error.h"

namespace detkit::data {

AspectRatioGrouper::AspectRatioGrouper(size_t batch_size) : batch_size_(batch_size) {
  if (batch_size == 0) throw Error("AspectRatioGrouper: batch size must be at least 1");
}

std::optional<std::vector<structures::ModelInput>> AspectRatioGrouper::add(
    structures::ModelInput input) {
  auto& bucket = buckets_[bucket_of(input.height, input.width)];
  bucket.push_back(std::move(input));
  if (bucket.size() < batch_size_) return std::nullopt;
  std::vector<structures::ModelInput> batch;
  batch.swap(bucket);
  return batch;
}

}  // namespace detkit::data
