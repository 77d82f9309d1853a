// A model description (`--config`), YAML or JSON.
#include "configs/model_description.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ort_train::parse_description(ort_train::fuzz::bytes_of(data, size), "/nonexistent/ort_train_fuzz", "fuzz.yaml");
  return 0;
}
