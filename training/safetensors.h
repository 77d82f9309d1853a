// The safetensors format (Hugging Face's; what PEFT saves adapters in):
//   8 bytes  little-endian u64 N, the header's length
//   N bytes  a JSON object: per tensor {"dtype": "F32", "shape": [...],
//            "data_offsets": [begin, end]} (offsets into the data that
//            follows), and "__metadata__": a map of strings to strings
//   the data, every byte of it some tensor's, no two tensors sharing one.
// Reading checks all of that (the format's own rules: no holes, no overlap,
// sizes that match the shapes) before a tensor is allocated.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/atomic_file.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "training/readable_bytes.h"

namespace ort_train {

struct SafetensorsEntry {
  DType dtype = DType::kUndefined;
  Dims dims;
  uint64_t offset = 0;  // of its first byte, in the file
};

struct SafetensorsHeader {
  std::map<std::string, SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
};

// The safetensors dtype name of `t` ("F32", "BF16", ...); "" for one the format has no name for.
std::string safetensors_dtype_name(DType t);

// The header of `bytes`, checked against the file: a caller can refuse a
// tensor by its name, dtype or shape before anything of it is read. Errors
// name the file and, where there is one, the tensor. A header past 100 MiB
// (the format library's own limit) is refused.
Result<SafetensorsHeader> read_safetensors_header(const ReadableBytes& bytes);

// One tensor of a checked header, into host memory.
Result<Tensor> read_safetensors_tensor(const ReadableBytes& bytes, const SafetensorsEntry& entry);

// Writes `tensors` (host tensors) and `metadata` to `path`, atomically
// (graph/atomic_file.h): wider dtypes first, then by name; the header padded
// to 8 bytes, so each tensor starts aligned to its element.
Status write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                         const std::map<std::string, std::string>& metadata,
                         OutputName name = OutputName::kUserNamed);

}  // namespace ort_train
