#include "training/row_order.h"

namespace ort_train {
namespace {

// SplitMix64's finalizer: a bijective 64-bit mix, the Feistel round function.
uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

constexpr int kRounds = 6;

}  // namespace

RowOrder::RowOrder(uint64_t rows, uint64_t seed, bool shuffle) : rows_(rows), seed_(seed), shuffle_(shuffle) {
  // The smallest even bit count whose range holds every row: under 4x the
  // rows, so cycle-walking takes fewer than 4 tries on average.
  while (half_bits_ < 32 && (uint64_t{1} << (2 * half_bits_)) < rows) ++half_bits_;
}

uint64_t RowOrder::permute(uint64_t key, uint64_t x) const {
  const uint64_t mask = (uint64_t{1} << half_bits_) - 1;
  uint64_t left = x >> half_bits_, right = x & mask;
  for (int r = 0; r < kRounds; ++r) {
    uint64_t next = left ^ (mix(key ^ (static_cast<uint64_t>(r) << 56) ^ right) & mask);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t RowOrder::row(uint64_t epoch, uint64_t position) const {
  if (!shuffle_ || rows_ <= 1) return position;
  const uint64_t key = mix(mix(seed_) ^ epoch);
  // A bijection on [0, 4^half_bits) maps [0, rows) into itself once values
  // outside are stepped past: each value's cycle through the network comes
  // back into range, and no two positions reach the same row.
  uint64_t x = permute(key, position);
  while (x >= rows_) x = permute(key, x);
  return x;
}

}  // namespace ort_train
