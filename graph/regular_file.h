// Opening and reading a file someone else supplied (a model, its external
// data, a tensor file): opened without waiting (O_NONBLOCK: a FIFO must not
// block the run), checked to be a regular file, every read checked (a file
// that shrank is an error, not zeros).
#pragma once
#include <sys/stat.h>

#include <cstdint>
#include <string>

#include "graph/status.h"

namespace ort_train {

// An open descriptor of a regular file (closed on destruction) and what
// fstat said of it when opened.
struct RegularFile {
  int fd = -1;
  uint64_t size = 0;
  struct stat info {};
  RegularFile() = default;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();
};

// Opens `path` for reading; a directory, FIFO, device or socket is refused by kind.
Status open_regular(const std::string& path, RegularFile& f);

// `length` bytes at `offset` into `dst`; `path` names the file in errors.
Status read_range_into(const RegularFile& f, const std::string& path, uint64_t offset, uint64_t length, char* dst);

}  // namespace ort_train
