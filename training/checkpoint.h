// Checkpoint files (format documented in docs/checkpoints.md): everything a
// run needs to continue exactly — parameters and other trained state
// (BatchNormalization statistics), optimizer state buffers and step, the data
// position (micro-batch counter), the seed — plus a fingerprint of the model
// and description so a checkpoint is only loaded by the run it belongs to.
// One file per checkpoint, written atomically, checked by length and hash.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
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
// The same from a file's bytes; `path` only names it in errors. Every length
// and tensor-table entry is checked before use.
Result<Checkpoint> parse_checkpoint(const std::string& bytes, const std::string& path);
// FNV-1a 64, the hash in a checkpoint's last 8 bytes (over every byte before them).
uint64_t checkpoint_hash(const char* p, size_t n);

// An exclusive lock on a checkpoint folder (flock on "<dir>/.lock", which
// holds the owner's pid), held until destroyed or the process ends, however
// it ends: two runs writing one folder would interleave their checkpoints and
// delete each other's. Creates the folder.
class CheckpointDirLock {
 public:
  static Result<std::unique_ptr<CheckpointDirLock>> acquire(const std::string& dir);
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

 private:
  explicit CheckpointDirLock(int fd) : fd_(fd) {}
  int fd_;
};

// "<dir>/ckpt-<step, 8 digits>.ortc"
std::string checkpoint_path(const std::string& dir, int64_t step);
// Checkpoint files in `dir`, newest step first.
std::vector<std::string> list_checkpoints(const std::string& dir);

}  // namespace ort_train
