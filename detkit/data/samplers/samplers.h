#pragma once
// Samplers: the order in which a rank visits dataset indices (Detectron2's samplers).
//
// TrainingSampler and RepeatFactorTrainingSampler draw with a torch CPU generator seeded with
// `seed`, exactly as Detectron2's do (torch.randperm, torch.rand), so one seed gives Detectron2's
// index stream. Every rank uses the same seed; rank r takes entries r, r + world_size,
// r + 2 * world_size, ... of that infinite stream.
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace detkit::data {

/// One sample of the training stream: its position in the stream all ranks share (what its
/// augmentations and the model's draws for it are seeded with) and its dataset index.
struct StreamSample {
  uint64_t position;
  size_t index;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The next dataset index, or nullopt when a finite sampler is done.
  virtual std::optional<size_t> next() = 0;
};

/// An infinite stream: epoch after epoch, a seeded permutation of [0, size) (or 0..size-1 in
/// order without shuffling), sharded by rank.
class TrainingSampler : public Sampler {
 public:
  TrainingSampler(size_t size, uint64_t seed, int rank = 0, int world_size = 1,
                  bool shuffle = true);
  std::optional<size_t> next() override;

 protected:
  /// The next entry of the stream shared by all ranks.
  size_t next_global();
  /// One epoch of the shared stream; drawn from generator_.
  virtual std::vector<int64_t> draw_epoch();

  at::Generator generator_;
  bool shuffle_;

 private:
  size_t size_;
  int rank_, world_size_;
  std::vector<int64_t> epoch_;
  size_t epoch_pos_ = 0;
  uint64_t global_pos_ = 0;
};

/// A TrainingSampler whose epochs repeat image i floor(r_i) times plus once more with
/// probability frac(r_i) (stochastic rounding, one torch.rand draw per image per epoch), then
/// shuffle (LVIS-style rebalancing, DATALOADER.SAMPLER_TRAIN RepeatFactorTrainingSampler).
class RepeatFactorTrainingSampler : public TrainingSampler {
 public:
  RepeatFactorTrainingSampler(std::vector<float> repeat_factors, uint64_t seed, int rank = 0,
                              int world_size = 1, bool shuffle = true);

 protected:
  std::vector<int64_t> draw_epoch() override;

 private:
  at::Tensor int_part_, frac_part_;  // float32, as Detectron2's
};

/// Detectron2's repeat_factors_from_category_frequency: f(c) = fraction of images containing
/// category c (crowd annotations count); r(c) = max(1, sqrt(t / f(c))) (or t / f(c) without
/// sqrt); an image's factor is the largest r(c) of its categories, 1 when it has none.
/// `image_categories[i]` lists the categories of image i (repeats allowed). Float32 results.
std::vector<float> repeat_factors_from_category_frequency(
    const std::vector<std::vector<int>>& image_categories, double repeat_threshold,
    bool use_sqrt = true);

/// A finite pass over [0, size): rank r takes one contiguous shard; the first size % world_size
/// ranks take one index more. Shards cover every index exactly once.
class InferenceSampler : public Sampler {
 public:
  InferenceSampler(size_t size, int rank = 0, int world_size = 1);
  std::optional<size_t> next() override;
  /// [begin, end) of rank's shard.
  static std::pair<size_t, size_t> shard(size_t size, int rank, int world_size);
  size_t shard_size() const { return end_ - begin_; }

 private:
  size_t begin_, end_, pos_;
};

}  // namespace detkit::data
