// A file written in pieces and put in place at once: the pieces go to a
// temporary sibling (<path>.tmp.<pid>), which commit() flushes to disk and
// renames over `path`. Dropped without commit() (an error, a crash), the
// temporary is removed and `path` keeps what it held: nothing half-written
// ever sits where a complete file was. Memory stays constant however large
// the file (checkpoints and exports of models past memory's reach). A path
// that is a device, FIFO or link (/dev/null, /dev/stdout) is written through
// where it is, never replaced.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "graph/status.h"

namespace ort_train {

class AtomicFileWriter {
 public:
  static Result<std::unique_ptr<AtomicFileWriter>> open(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  Status write(const void* data, size_t n);
  Status commit();
  uint64_t bytes() const { return bytes_; }

 private:
  AtomicFileWriter(int fd, std::string path, std::string tmp) : fd_(fd), path_(std::move(path)), tmp_(std::move(tmp)) {}
  int fd_;
  std::string path_, tmp_;
  uint64_t bytes_ = 0;
  bool committed_ = false;
};

}  // namespace ort_train
