#include "graph/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ort_train {

Result<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::open(const std::string& path) {
  // A device, FIFO or link (/dev/null, /dev/stdout) is written through as it
  // is: a rename over it would replace the system's file, or the link, with a
  // regular file.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return io_error("cannot write {}: {}", path, std::strerror(errno));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // opened without waiting; written with waiting
    auto w = std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(fd, path, ""));
    return w;
  }
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  // O_NOFOLLOW: a link planted at the temporary name is not written through.
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return io_error("cannot write {}: {}", tmp, std::strerror(errno));
  return std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(fd, path, tmp));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

Status AtomicFileWriter::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    // Pieces of at most 1 GiB: one write(2) moves at most about 2 GiB.
    ssize_t put = ::write(fd_, p, std::min<size_t>(n, size_t{1} << 30));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return io_error("failed writing {}: {}", path_, std::strerror(errno));
    p += put;
    n -= static_cast<size_t>(put);
    bytes_ += static_cast<uint64_t>(put);
  }
  return Status::Ok();
}

Status AtomicFileWriter::commit() {
  if (tmp_.empty()) {  // written through: nothing to rename
    int fd = fd_;
    fd_ = -1;
    committed_ = true;
    if (::close(fd) != 0) return io_error("failed writing {}: {}", path_, std::strerror(errno));
    return Status::Ok();
  }
  if (::fsync(fd_) != 0) return io_error("failed writing {}: {}", path_, std::strerror(errno));
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return io_error("failed writing {}: {}", path_, std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(tmp_, path_, ec);
  if (ec) return io_error("cannot rename {} to {}: {}", tmp_, path_, ec.message());
  committed_ = true;
  return Status::Ok();
}

}  // namespace ort_train
