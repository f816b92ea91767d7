#pragma once
// SampleRng: the random draws of one sample's augmentations. Seeded from (seed, position of the
// sample in the loader's stream), so what a sample gets depends on the seed and its position,
// never on which thread maps it or when. splitmix64 seeding and xoshiro256** generation: the
// same numbers on every platform and standard library.
#include <cstddef>
#include <cstdint>

namespace detkit::data {

class SampleRng {
 public:
  /// The generator of the sample at `position` (0, 1, 2, ...) of the stream seeded by `seed`.
  SampleRng(uint64_t seed, uint64_t position);

  /// 64 uniformly random bits.
  uint64_t next_u64();
  /// Uniform in [0, 1), 53-bit resolution.
  double uniform();
  /// Uniform integer in [low, high], both included; an error when high < low.
  int64_t randint(int64_t low, int64_t high);
  /// Uniform index in [0, n); an error when n is 0.
  size_t choice(size_t n);

 private:
  uint64_t s_[4];
};

/// The seed of the model's random draws for the sample at `position` of the stream seeded by
/// `seed` (ModelInput::sampling_seed: anchor and proposal sampling); unrelated to the draws of
/// its augmentations.
uint64_t model_sampling_seed(uint64_t seed, uint64_t position);

}  // namespace detkit::data
