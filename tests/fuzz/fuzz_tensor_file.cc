// A TensorProto file (`run --inputs`, ONNX test data's input_N.pb).
#include "graph/onnx_io.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)ort_train::parse_tensor_file(ort_train::fuzz::bytes_of(data, size), "/nonexistent/ort_train_fuzz", "fuzz.pb");
  return 0;
}
