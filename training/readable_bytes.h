// Bytes read by position, never whole: a file through pread (what is hot stays
// in the kernel's page cache, not in the process: a data set larger than
// memory leaves the run's RSS flat, which mapped pages would not), or a string
// in memory (tests, the fuzzer). Reads are safe from several threads at once.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "graph/status.h"

namespace ort_train {

class ReadableBytes {
 public:
  virtual ~ReadableBytes() = default;
  virtual uint64_t size() const = 0;
  // Exactly n bytes at `at`; an error naming the file when they are not there.
  virtual Status read(uint64_t at, size_t n, void* dst) const = 0;
  virtual const std::string& name() const = 0;
  // n bytes at `at` as a string (headers, directories: small reads).
  Result<std::string> read_string(uint64_t at, size_t n) const;
};

// A regular file, opened when first read. Open descriptors are shared by all
// such files and capped (64, least recently read closed first), so a folder
// of thousands of shards stays under the descriptor limit.
Result<std::shared_ptr<const ReadableBytes>> open_readable_file(const std::string& path);

std::shared_ptr<const ReadableBytes> readable_string(std::string bytes, std::string name);

// An unnamed temporary file (gone when the process ends, crashed or not) that
// is appended to and then read: deflated NPZ members are inflated into it once.
class SpoolFile : public ReadableBytes {
 public:
  // In $TMPDIR (else /tmp); `what` names it in errors.
  static Result<std::shared_ptr<SpoolFile>> create(const std::string& what);
  ~SpoolFile() override;
  uint64_t size() const override { return size_; }
  Status read(uint64_t at, size_t n, void* dst) const override;
  const std::string& name() const override { return name_; }
  Status append(const void* data, size_t n);
  // Bytes free where it lives (statvfs), so a member is refused before it fills the disk.
  uint64_t free_bytes() const;

 private:
  SpoolFile(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  int fd_;
  std::string name_;
  uint64_t size_ = 0;
};

}  // namespace ort_train
