// A file written in pieces and put in place at once: the pieces go to a
// temporary sibling (<path>.tmp.<host>.<pid>), which commit() flushes to disk and
// renames over `path`. Dropped without commit() (an error, a crash), the
// temporary is removed and `path` keeps what it held: nothing half-written
// ever sits where a complete file was. Memory stays constant however large
// the file (checkpoints and exports of models past memory's reach).
//
// Whose name it is decides what happens to a device, FIFO or link already at
// the path. A name the user gave (--export, --metrics) that is one of those
// (/dev/null, /dev/stdout, a link to their own file) is written through where
// it is, never replaced. A name ort_train chose (a checkpoint's, a
// temporary, an event file) is never written through: whatever a stranger
// planted there is replaced, and the link's target is left untouched.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "graph/status.h"

namespace ort_train {

enum class OutputName { kUserNamed, kChosen };

// Creates `path` as a new file for writing whatever is at that name: a link,
// FIFO or file there is removed first, never followed or opened (a folder is
// an error), then the file is made with O_CREAT | O_EXCL | O_NOFOLLOW. For
// names ort_train chooses. The descriptor, or an error naming the path.
Result<int> create_new_file(const std::string& path, unsigned mode = 0644);

// Writes all `n` bytes to `fd` (a descriptor of `path`, named in the error).
Status write_all(int fd, const void* data, size_t n, const std::string& path);

class AtomicFileWriter {
 public:
  static Result<std::unique_ptr<AtomicFileWriter>> open(const std::string& path,
                                                        OutputName name = OutputName::kUserNamed);
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
