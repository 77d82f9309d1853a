// NumPy .npz archives (np.savez / np.savez_compressed): a zip of .npy arrays.
// Reads stored and deflated members; little-endian C-order arrays of float32,
// float64, int64, int32, int8, uint8 and bool.
#pragma once
#include <map>
#include <string>

#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train {

// Arrays by name (the member name without ".npy").
Result<std::map<std::string, Tensor>> read_npz(const std::string& path);
// The same from the archive's bytes; `path` only names it in errors.
Result<std::map<std::string, Tensor>> parse_npz(const std::string& bytes, const std::string& path);

// Writes arrays as an uncompressed .npz (what np.savez writes), atomically.
Status write_npz(const std::map<std::string, Tensor>& arrays, const std::string& path);

}  // namespace ort_train
