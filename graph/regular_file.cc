#include "graph/regular_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ort_train {
namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

RegularFile::~RegularFile() {
  if (fd >= 0) ::close(fd);
}

Status open_regular(const std::string& path, RegularFile& f) {
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0) {
    if (errno == ENOENT) return io_error("file not found: {}", path);
    return io_error("cannot open {}: {}", path, std::strerror(errno));
  }
  if (::fstat(f.fd, &f.info) != 0) return io_error("cannot read {}: {}", path, std::strerror(errno));
  if (S_ISDIR(f.info.st_mode)) return io_error("expected a file but found a directory: {}", path);
  if (!S_ISREG(f.info.st_mode))
    return io_error("{} is {}, not a regular file: refused", path, file_kind(f.info.st_mode));
  f.size = static_cast<uint64_t>(f.info.st_size);
  return Status::Ok();
}

Status read_range_into(const RegularFile& f, const std::string& path, uint64_t offset, uint64_t length, char* dst) {
  uint64_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(f.fd, dst + done, static_cast<size_t>(length - done), static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("cannot read {}: {}", path, std::strerror(errno));
    if (n == 0) return io_error("cannot read {}: it ended after {} of {} bytes", path, offset + done, offset + length);
    done += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

}  // namespace ort_train
