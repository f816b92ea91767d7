#pragma once
// Deterministic random numbers for the synthetic shapes dataset. std::uniform_*_distribution and
// std::normal_distribution differ between standard libraries, so the generator draws from
// std::mt19937_64 (whose output the standard fixes) through these few formulas instead: the same
// seed gives the same images on every platform.
#include <cstdint>
#include <random>

namespace detkit::data {

class ShapesRandom {
 public:
  explicit ShapesRandom(uint64_t seed) : engine_(seed) {}

  /// Uniform in [0, 1), from the top 53 bits of one draw.
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  /// Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [lo, hi] (both included), without modulo bias.
  int uniform_int(int lo, int hi);
  /// exp(uniform(log lo, log hi)): every scale between lo and hi equally likely.
  double log_uniform(double lo, double hi);
  bool bernoulli(double p) { return uniform() < p; }
  /// Cheap bell-shaped noise with mean 0 and standard deviation 1 (a sum of three uniforms,
  /// rescaled), for per-pixel noise where millions of draws are needed.
  double noise();

 private:
  std::mt19937_64 engine_;
};

/// A well-mixed 64-bit seed for item `index` of stream `stream` under the user's `seed`
/// (SplitMix64 finaliser), so images can be generated in any order, on any thread.
uint64_t derive_seed(uint64_t seed, uint64_t stream, uint64_t index);

}  // namespace detkit::data
