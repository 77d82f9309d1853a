// FNV-1a 64 over bytes: a hash that stays the same across compilers and
// library versions (std::hash does not), for checkpoint checksums and for
// seeds derived from node names (attention_fusion's dropout seed).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ort_train {

inline uint64_t fnv1a64(const char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace ort_train
