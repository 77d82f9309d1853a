// NumPy .npz archives (np.savez / np.savez_compressed): a zip of .npy arrays.
// Reads stored and deflated members, ZIP64 included; little-endian C-order
// arrays of float32, float64, int64, int32, int8, uint8 and bool. The
// directory is read by position (training/readable_bytes.h), so a shard is
// located without reading its arrays: stored ones are read where they lie,
// deflated ones inflated once into a temporary file.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"
#include "training/readable_bytes.h"

namespace ort_train {

// Arrays by name (the member name without ".npy"), read whole.
Result<std::map<std::string, Tensor>> read_npz(const std::string& path);
// The same from the archive's bytes; `path` only names it in errors.
Result<std::map<std::string, Tensor>> parse_npz(const std::string& bytes, const std::string& path);

// Writes arrays as an uncompressed .npz (what np.savez writes), atomically.
Status write_npz(const std::map<std::string, Tensor>& arrays, const std::string& path);

// One member of the archive, from its central directory.
struct NpzMember {
  std::string name;      // the array's name (the member's, without ".npy")
  uint16_t method = 0;   // 0 stored, 8 deflated
  uint64_t offset = 0;   // where its (compressed) bytes start in the archive
  uint64_t compressed = 0, size = 0;
};
Result<std::vector<NpzMember>> list_npz_members(const ReadableBytes& zip);

// An array's elements, where they lie: `bytes` from `data_at` on, C order.
struct NpyArrayLocation {
  std::string name;
  DType dtype = DType::kFloat;
  Dims dims;
  std::shared_ptr<const ReadableBytes> bytes;
  uint64_t data_at = 0;
};
// Every array of the archive, located without reading its elements: a stored
// member in the archive itself, a deflated one inflated (chunk by chunk, in
// constant memory) into `spool`, created on first need. Refused, by member,
// before anything is inflated: an expansion deflate cannot make (a bomb), or
// more than the spool's free disk.
Result<std::vector<NpyArrayLocation>> locate_npz_arrays(const std::shared_ptr<const ReadableBytes>& zip,
                                                        std::shared_ptr<SpoolFile>& spool);

}  // namespace ort_train
