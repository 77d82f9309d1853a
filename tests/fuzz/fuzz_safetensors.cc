// A safetensors file (--adapters): the header checked against the file, then
// every tensor it names read.
#include "tests/fuzz/fuzz_input.h"
#include "training/readable_bytes.h"
#include "training/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto bytes = ort_train::readable_string(ort_train::fuzz::bytes_of(data, size), "fuzz.safetensors");
  auto header = ort_train::read_safetensors_header(*bytes);
  if (!header.ok()) return 0;
  for (const auto& [name, entry] : header->entries) (void)ort_train::read_safetensors_tensor(*bytes, entry);
  return 0;
}
