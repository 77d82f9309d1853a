// A NumPy .npz archive (`--data`): zip directory, deflate, .npy headers.
#include "training/npz.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ort_train::parse_npz(ort_train::fuzz::bytes_of(data, size), "fuzz.npz");
  return 0;
}
