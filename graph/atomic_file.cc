#include "graph/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ort_train {

Result<int> create_new_file(const std::string& path, unsigned mode) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return io_error("cannot write {}: it is a folder", path);
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return io_error("cannot replace {}: {}", path, std::strerror(errno));
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
  if (fd < 0 && errno == EEXIST)
    return io_error("cannot write {}: another process created it at the same moment", path);
  if (fd < 0) return io_error("cannot write {}: {}", path, std::strerror(errno));
  return fd;
}

Status write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    // Pieces of at most 1 GiB: one write(2) moves at most about 2 GiB.
    ssize_t put = ::write(fd, p, std::min<size_t>(n, size_t{1} << 30));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return io_error("failed writing {}: {}", path, std::strerror(errno));
    p += put;
    n -= static_cast<size_t>(put);
  }
  return Status::Ok();
}

Result<std::unique_ptr<AtomicFileWriter>> AtomicFileWriter::open(const std::string& path, OutputName name) {
  // A device, FIFO or link the user named (/dev/null, /dev/stdout) is written
  // through as it is: a rename over it would replace the system's file, or
  // the link, with a regular file.
  struct stat st {};
  if (name == OutputName::kUserNamed && ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) &&
      !S_ISDIR(st.st_mode)) {
    int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return io_error("cannot write {}: {}", path, std::strerror(errno));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // opened without waiting; written with waiting
    auto w = std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(fd, path, ""));
    return w;
  }
  // The host too: ranks of a job on several machines may share a folder and a
  // pid, and write one file (the same bytes, e.g. --kernel-choices).
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::string tmp = path + ".tmp." + std::string(host) + "." + std::to_string(::getpid());
  // A link or FIFO planted at the temporary name is replaced, not written through or waited on.
  ASSIGN_OR_RETURN(int fd, create_new_file(tmp));
  return std::unique_ptr<AtomicFileWriter>(new AtomicFileWriter(fd, path, tmp));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !tmp_.empty()) ::unlink(tmp_.c_str());
}

Status AtomicFileWriter::write(const void* data, size_t n) {
  RETURN_IF_ERROR(write_all(fd_, data, n, path_));
  bytes_ += n;
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
