#pragma once
// BatchPlanner: which samples make up each training batch, decided on the annotation file's
// image sizes before any image is decoded. With aspect-ratio grouping (Detectron2's
// AspectRatioGroupedDataset, which groups on the same original sizes after mapping) wide images
// (width > height) fill one bucket and the others a second; a bucket that reaches the batch size
// is the next batch, its samples in stream order. Without grouping a batch is the next
// batch-size samples. Planning first lets a resumed run skip batches without decoding them, and
// lets every rank plan the same global batch and map only its own slice of it.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "detkit/data/samplers/samplers.h"

namespace detkit::data {

class BatchPlanner {
 public:
  /// The aspect-ratio class of a dataset index: 0 wide, 1 tall or square.
  using BucketOf = std::function<int(size_t index)>;

  /// Draws from `sampler` (not owned; it must outlive the planner); the k-th sample it draws has
  /// stream position first_position + k * position_stride. An empty `bucket_of`: no grouping.
  BatchPlanner(Sampler& sampler, size_t batch_size, BucketOf bucket_of, uint64_t first_position = 0,
               uint64_t position_stride = 1);
  /// The next batch; a detkit::Error when the sampler ends.
  std::vector<StreamSample> next();
  /// Samples drawn from the sampler so far, and those of them waiting in a bucket.
  uint64_t drawn() const { return drawn_; }
  size_t waiting() const { return buckets_[0].size() + buckets_[1].size(); }

  /// The aspect-ratio class of an image of this original size.
  static int bucket_of(int64_t height, int64_t width) { return width > height ? 0 : 1; }

 private:
  Sampler& sampler_;
  size_t batch_size_;
  BucketOf bucket_of_;
  uint64_t first_position_, position_stride_, drawn_ = 0;
  std::vector<StreamSample> buckets_[2];
};

}  // namespace detkit::data
