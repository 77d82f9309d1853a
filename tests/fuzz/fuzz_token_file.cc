// A token file (`--data tokens.bin`): llm.c's header (magic, version, count)
// or raw uint16/uint32 tokens. The first input byte picks the window length
// (1 to 64), the ids' dtype and the raw width; the rest is the file. Every
// row the file claims is a window read from it, first, middle and last.
#include "tests/fuzz/fuzz_input.h"
#include "training/readable_bytes.h"
#include "training/row_dataset.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string bytes = ort_train::fuzz::bytes_of(data + 1, size - 1);
  ort_train::TokenWindows w;
  w.seq = 1 + (data[0] & 63);
  w.input_ids = "input_ids";
  w.labels = "labels";
  w.input_dtype = w.labels_dtype = (data[0] & 64) ? ort_train::DType::kInt32 : ort_train::DType::kInt64;
  w.raw_dtype = (data[0] & 128) ? ort_train::DType::kUInt32 : ort_train::DType::kUInt16;
  w.fill["attention_mask"] = {ort_train::DType::kInt64, 1.0};
  auto ds = ort_train::token_shards_of({ort_train::readable_string(std::move(bytes), "fuzz.bin")}, w);
  if (!ds.ok() || (*ds)->rows() == 0) return 0;
  const uint64_t rows = (*ds)->rows();
  (void)(*ds)->read({0, rows / 2, rows - 1});
  return 0;
}
