#include "detkit/data/samplers/samplers.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

void check_rank(int rank, int world_size, const char* who) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw Error(std::string(who) + ": rank " + std::to_string(rank) + " is not within world size " +
                std::to_string(world_size));
  }
}

}  // namespace

TrainingSampler::TrainingSampler(size_t size, uint64_t seed, int rank, int world_size, bool shuffle)
    : generator_(at::make_generator<at::CPUGeneratorImpl>(seed)),
      shuffle_(shuffle),
      size_(size),
      rank_(rank),
      world_size_(world_size) {
  if (size == 0) throw Error("TrainingSampler: the dataset is empty");
  check_rank(rank, world_size, "TrainingSampler");
}

std::vector<int64_t> TrainingSampler::draw_epoch() {
  const auto n = static_cast<int64_t>(size_);
  at::Tensor order = shuffle_ ? at::randperm(n, generator_, at::TensorOptions(at::kLong))
                              : at::arange(n, at::kLong);
  return std::vector<int64_t>(order.data_ptr<int64_t>(), order.data_ptr<int64_t>() + n);
}

size_t TrainingSampler::next_global() {
  while (epoch_pos_ >= epoch_.size()) {
    epoch_ = draw_epoch();
    epoch_pos_ = 0;
  }
  ++global_pos_;
  return static_cast<size_t>(epoch_[epoch_pos_++]);
}

std::optional<size_t> TrainingSampler::next() {
  // Skip to the next stream position p with p % world_size == rank.
  while (global_pos_ % world_size_ != static_cast<uint64_t>(rank_)) next_global();
  return next_global();
}

RepeatFactorTrainingSampler::RepeatFactorTrainingSampler(std::vector<float> repeat_factors,
                                                         uint64_t seed, int rank, int world_size,
                                                         bool shuffle)
    : TrainingSampler(repeat_factors.size(), seed, rank, world_size, shuffle) {
  at::Tensor factors = at::from_blob(repeat_factors.data(),
                                     {static_cast<int64_t>(repeat_factors.size())}, at::kFloat)
                           .clone();
  int_part_ = at::trunc(factors);
  frac_part_ = factors - int_part_;
}

std::vector<int64_t> RepeatFactorTrainingSampler::draw_epoch() {
  at::Tensor rands = at::rand({frac_part_.size(0)}, generator_, at::TensorOptions(at::kFloat));
  at::Tensor factors = int_part_ + rands.lt(frac_part_).to(at::kFloat);
  std::vector<int64_t> indices;
  const float* f = factors.data_ptr<float>();
  for (int64_t i = 0; i < factors.size(0); ++i) {
    indices.insert(indices.end(), static_cast<size_t>(f[i]), i);
  }
  if (indices.empty()) throw Error("RepeatFactorTrainingSampler: every repeat factor is 0");
  if (!shuffle_) return indices;
  at::Tensor perm =
      at::randperm(static_cast<int64_t>(indices.size()), generator_, at::TensorOptions(at::kLong));
  std::vector<int64_t> shuffled(indices.size());
  const int64_t* p = perm.data_ptr<int64_t>();
  for (size_t k = 0; k < indices.size(); ++k) shuffled[k] = indices[p[k]];
  return shuffled;
}

std::vector<float> repeat_factors_from_category_frequency(
    const std::vector<std::vector<int>>& image_categories, double repeat_threshold, bool use_sqrt) {
  if (image_categories.empty()) throw Error("repeat factors: the dataset is empty");
  std::map<int, size_t> images_with;
  for (const auto& categories : image_categories) {
    for (int c : std::set<int>(categories.begin(), categories.end())) ++images_with[c];
  }
  const double num_images = static_cast<double>(image_categories.size());
  std::map<int, double> category_repeat;
  for (const auto& [c, count] : images_with) {
    const double ratio = repeat_threshold / (count / num_images);
    category_repeat[c] = std::max(1.0, use_sqrt ? std::sqrt(ratio) : ratio);
  }
  std::vector<float> factors;
  factors.reserve(image_categories.size());
  for (const auto& categories : image_categories) {
    double factor = 1.0;
    for (int c : categories) factor = std::max(factor, category_repeat[c]);
    factors.push_back(static_cast<float>(factor));
  }
  return factors;
}

std::pair<size_t, size_t> InferenceSampler::shard(size_t size, int rank, int world_size) {
  check_rank(rank, world_size, "InferenceSampler");
  const size_t per_rank = size / world_size, left = size % world_size;
  size_t begin = 0;
  for (int r = 0; r < rank; ++r) begin += per_rank + (static_cast<size_t>(r) < left ? 1 : 0);
  const size_t end = begin + per_rank + (static_cast<size_t>(rank) < left ? 1 : 0);
  return {begin, std::min(end, size)};
}

InferenceSampler::InferenceSampler(size_t size, int rank, int world_size) {
  std::tie(begin_, end_) = shard(size, rank, world_size);
  pos_ = begin_;
}

std::optional<size_t> InferenceSampler::next() {
  if (pos_ >= end_) return std::nullopt;
  return pos_++;
}

}  // namespace detkit::data
