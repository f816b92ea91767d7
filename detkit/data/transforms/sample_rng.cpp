#include "detkit/data/transforms/sample_rng.h"

#include <string>

#include "detkit/utils/error.h"

namespace detkit::data {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

SampleRng::SampleRng(uint64_t seed, uint64_t position) {
  // Two rounds of mixing keep (seed, position) and (seed + 1, position - 1) unrelated.
  uint64_t state = seed;
  uint64_t mixed = splitmix64(state);
  state = mixed ^ (position * 0xd1b54a32d192ed03ULL);
  for (uint64_t& s : s_) s = splitmix64(state);
}

uint64_t SampleRng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double SampleRng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

int64_t SampleRng::randint(int64_t low, int64_t high) {
  if (high < low) {
    throw Error("SampleRng::randint: empty range [" + std::to_string(low) + ", " +
                std::to_string(high) + "]");
  }
  const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low) + 1;
  if (span == 0) return static_cast<int64_t>(next_u64());  // the whole int64 range
  // Rejection sampling: draws below `limit` map uniformly onto [0, span).
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % span + 1) % span;
  uint64_t draw = next_u64();
  while (draw > limit) draw = next_u64();
  return static_cast<int64_t>(static_cast<uint64_t>(low) + draw % span);
}

size_t SampleRng::choice(size_t n) {
  if (n == 0) throw Error("SampleRng::choice: nothing to choose from");
  return static_cast<size_t>(randint(0, static_cast<int64_t>(n) - 1));
}

uint64_t model_sampling_seed(uint64_t seed, uint64_t position) {
  // The augmentations' generator of another seed: a stream of its own.
  return SampleRng(seed ^ 0x6a09e667f3bcc909ULL, position).next_u64();
}

}  // namespace detkit::data
