// Checkpoint files written in place or on a background thread. In the
// background (--async-checkpoint, as PyTorch's async_save) the step that
// checkpoints pauses only for its snapshot, a copy of the state in host
// memory; the file is written while training goes on. One write at a time: a
// later checkpoint, and the end of the run, wait for the one before, and a
// write that failed is the error of the next call (poll() before each step),
// never lost. Either way the file appears whole or not at all
// (graph/atomic_file.h), and only the newest `keep` are kept.
#pragma once
#include <future>
#include <string>

#include "training/checkpoint.h"

namespace ort_train {

class CheckpointWriter {
 public:
  CheckpointWriter(std::string dir, int keep, bool background)
      : dir_(std::move(dir)), keep_(keep), background_(background) {}
  ~CheckpointWriter();  // waits for a write in flight (its error, if any, is logged)
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  bool background() const { return background_; }
  // Writes <dir>/ckpt-<step>.ortc. In the background `c` must own its
  // tensors (Trainer::snapshot(..., detached = true)); the call returns once
  // the previous write has ended, with that write's error if it failed.
  Status write(Checkpoint c);
  // The write in flight, waited for: its outcome.
  Status finish();
  // The last write's outcome if it has ended (ok while it runs).
  Status poll();

 private:
  std::string dir_;
  int keep_;
  bool background_;
  std::future<Status> in_flight_;
};

// Writes `c` into `dir` now: the file, then the folder trimmed to the newest
// `keep`, with a log line giving its size and time.
Status write_checkpoint_into(const Checkpoint& c, const std::string& dir, int keep, const std::string& how);

}  // namespace ort_train
