#pragma once
// Batches of images of one aspect-ratio class (Detectron2's AspectRatioGroupedDataset): wide
// images (width > height, original size) fill one bucket, the others a second; a bucket that
// reaches the batch size is emitted and emptied. Fewer padding pixels per batch.
#include <array>
#include <optional>
#include <vector>

#include "detkit/structures/model_io.h"

namespace detkit::data {

class AspectRatioGrouper {
 public:
  explicit AspectRatioGrouper(size_t batch_size);
  /// Adds one sample; returns a full batch when its bucket just filled.
  std::optional<std::vector<structures::ModelInput>> add(structures::ModelInput input);
  /// 0 for wide (width > height), 1 for tall or square.
  static int bucket_of(int64_t height, int64_t width) { return width > height ? 0 : 1; }

 private:
  size_t batch_size_;
  std::array<std::vector<structures::ModelInput>, 2> buckets_;
};

}  // namespace detkit::data
