#include "detkit/data/samplers/batch_planner.h"

#include <utility>

#include "detkit/utils/error.h"

namespace detkit::data {

BatchPlanner::BatchPlanner(Sampler& sampler, size_t batch_size, BucketOf bucket_of,
                           uint64_t first_position, uint64_t position_stride)
    : sampler_(sampler),
      batch_size_(batch_size),
      bucket_of_(std::move(bucket_of)),
      first_position_(first_position),
      position_stride_(position_stride) {
  if (batch_size == 0) throw Error("BatchPlanner: batch size must be at least 1");
}

std::vector<StreamSample> BatchPlanner::next() {
  while (true) {
    const std::optional<size_t> index = sampler_.next();
    if (!index) throw Error("TrainLoader: the training sampler ended");
    const StreamSample sample{first_position_ + drawn_++ * position_stride_, *index};
    std::vector<StreamSample>& bucket = buckets_[bucket_of_ ? bucket_of_(*index) : 0];
    bucket.push_back(sample);
    if (bucket.size() == batch_size_) return std::exchange(bucket, {});
  }
}

}  // namespace detkit::data
