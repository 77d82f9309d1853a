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
#include "training/readable_bytes.h"

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

// A checkpoint's counters and tensor table, its tensors read one at a time
// into the caller's buffers: what a resume restores from, so that it needs no
// second copy of the state. From a file (hash-checked when opened) or from a
// Checkpoint in memory (which must outlive it).
class CheckpointReader {
 public:
  struct Entry {
    std::string name;
    DType dtype;
    Dims dims;
    uint64_t bytes;
  };
  int64_t step = 0, micro_batch = 0;
  uint64_t seed = 0;
  std::map<std::string, std::string> fingerprint;
  const std::vector<Entry>& entries() const { return entries_; }
  // `n` bytes of entry i from byte `from` on, into `dst`.
  Status read(size_t i, void* dst, uint64_t from, uint64_t n) const;
  Status read(size_t i, void* dst) const { return read(i, dst, 0, entries_[i].bytes); }
  Result<Tensor> read_tensor(size_t i) const;

  static Result<CheckpointReader> open(std::shared_ptr<const ReadableBytes> file);
  static CheckpointReader of(const Checkpoint& c);

 private:
  std::vector<Entry> entries_;
  std::shared_ptr<const ReadableBytes> file_;
  std::vector<uint64_t> at_;            // file: where each tensor's bytes start
  const Checkpoint* memory_ = nullptr;  // in memory: the tensors themselves
};

Status write_checkpoint(const Checkpoint& c, const std::string& path);
// Opens and verifies one file (magic, version, length, hash) for reading tensor by tensor.
Result<CheckpointReader> open_checkpoint(const std::string& path);
// Reads and verifies one file (magic, version, length, hash), every tensor
// into memory; errors name the problem. Read by position, a piece at a time:
// the hash is checked over the whole file before any tensor is read.
Result<Checkpoint> read_checkpoint(const std::string& path);
Result<Checkpoint> read_checkpoint(const std::shared_ptr<const ReadableBytes>& file);
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
