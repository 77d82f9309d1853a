// A checkpoint file (`--resume`). The hash is checked first, so mutations of a
// real checkpoint mostly stop there; the target also reads the bytes with the
// hash recomputed, which is what a deliberately forged file looks like.
#include <cstring>

#include "training/checkpoint.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

// The bytes with their last 8 replaced by the hash of the rest.
std::string rehashed(std::string bytes) {
  if (bytes.size() < 8) return bytes;
  uint64_t h = ort_train::checkpoint_hash(bytes.data(), bytes.size() - 8);
  std::memcpy(bytes.data() + bytes.size() - 8, &h, 8);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes = ort_train::fuzz::bytes_of(data, size);
  (void)ort_train::parse_checkpoint(bytes, "fuzz.ortc");
  (void)ort_train::parse_checkpoint(rehashed(bytes), "fuzz.ortc");
  return 0;
}
