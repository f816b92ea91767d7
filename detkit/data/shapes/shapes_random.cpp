#include "detkit/data/shapes/shapes_random.h"

#include <cmath>

namespace detkit::data {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

int ShapesRandom::uniform_int(int lo, int hi) {
  if (hi <= lo) return lo;
  const uint64_t range = static_cast<uint64_t>(static_cast<int64_t>(hi) - lo) + 1;
  // Reject the top partial block of 2^64 so every value is equally likely.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % range;
  uint64_t x = engine_();
  while (x >= limit) x = engine_();
  return static_cast<int>(lo + static_cast<int64_t>(x % range));
}

double ShapesRandom::log_uniform(double lo, double hi) {
  return std::exp(uniform(std::log(lo), std::log(hi)));
}

double ShapesRandom::noise() {
  // Three 21-bit uniforms from one draw; their sum has variance 3 / 12 = 1 / 4.
  const uint64_t x = engine_();
  constexpr double kScale = 0x1.0p-21;
  const double a = static_cast<double>(x & 0x1FFFFF) * kScale;
  const double b = static_cast<double>((x >> 21) & 0x1FFFFF) * kScale;
  const double c = static_cast<double>((x >> 42) & 0x1FFFFF) * kScale;
  return (a + b + c - 1.5) * 2.0;
}

uint64_t derive_seed(uint64_t seed, uint64_t stream, uint64_t index) {
  return splitmix64(splitmix64(splitmix64(seed) ^ stream) ^ index);
}

}  // namespace detkit::data
