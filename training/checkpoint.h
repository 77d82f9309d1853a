// Checkpoint files (format documented in docs/checkpoints.md): everything a
// run needs to continue exactly — parameters and other trained state
// (BatchNormalization statistics), optimizer state buffers and step, the data
// position (micro-batch counter), the seed — plus a fingerprint of the model
// and description so a checkpoint is only loaded by the run it belongs to.
// One file per checkpoint, written atomically, checked by length and hash.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train {

struct Checkpoint {
  static constexpr uint32_t kVersion = 1;
  int64_t step = 0;          // optimizer steps taken
  int64_t micro_batch = 0;   // micro-batches consumed (the data position)
  uint64_t seed = 0;
  // Fingerprint parts, compared one by one so a mismatch says what differs.
  std::map<std::string, std::string> fingerprint;
  std::vector<std::pair<std::string, Tensor>> tensors;  // "param/<name>", "state/<name>", ...
};

Status write_checkpoint(const Checkpoint& c, const std::string& path);
// Reads and verifies one file (magic, version, length, hash); errors name the problem.
Result<Checkpoint> read_checkpoint(const std::string& path);

// "<dir>/ckpt-<step, 8 digits>.ortc"
std::string checkpoint_path(const std::string& dir, int64_t step);
// Checkpoint files in `dir`, newest step first.
std::vector<std::string> list_checkpoints(const std::string& dir);

}  // namespace ort_train
