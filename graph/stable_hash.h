// FNV-1a 64 over bytes: a hash that stays the same across compilers and
// library versions (std::hash does not), for checkpoint checksums and for
// seeds derived from node names (attention_fusion's dropout seed).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ort_train {

inline constexpr uint64_t kFnv1a64Start = 1469598103934665603ull;

// The hash of the bytes hashed into `h` so far followed by these: a file
// hashed piece by piece gets the hash of its whole.
inline uint64_t fnv1a64_update(uint64_t h, const void* data, size_t n) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

inline uint64_t fnv1a64(const char* p, size_t n) { return fnv1a64_update(kFnv1a64Start, p, n); }

}  // namespace ort_train
