#include "training/readable_bytes.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <list>
#include <mutex>

namespace ort_train {

Result<std::string> ReadableBytes::read_string(uint64_t at, size_t n) const {
  std::string s(n, '\0');
  RETURN_IF_ERROR(read(at, n, s.data()));
  return s;
}

namespace {

// pread until n bytes are read (a read may return fewer), or fail.
Status pread_exact(int fd, uint64_t at, size_t n, void* dst, const std::string& name) {
  char* out = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd, out, n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return io_error("{}: read failed at byte {}: {}", name, at, std::strerror(errno));
    if (got == 0) return io_error("{}: ends at byte {}, {} more bytes were expected", name, at, n);
    out += got;
    at += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
  return Status::Ok();
}

struct Descriptor {
  explicit Descriptor(int f) : fd(f) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() { ::close(fd); }
  int fd;
};

class ReadableFile;

// The open descriptors of every ReadableFile: at most kOpen, least recently
// read closed first. A read in flight holds its descriptor, so closing one
// here never pulls it from under a reader.
class DescriptorCache {
 public:
  static DescriptorCache& instance() {
    static DescriptorCache cache;
    return cache;
  }
  Result<std::shared_ptr<Descriptor>> get(const ReadableFile* file, const std::string& path) {
    std::lock_guard lock(mu_);
    for (auto it = open_.begin(); it != open_.end(); ++it)
      if (it->first == file) {
        open_.splice(open_.begin(), open_, it);
        return open_.front().second;
      }
    // Reopened by path whenever the cache dropped it: what is there now may
    // not be the file that was checked (a shard replaced by a FIFO during the
    // run). Opened without waiting and refused unless still a regular file.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return io_error("cannot open {}: {}", path, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return io_error("{} is no longer a regular file (it was replaced during the run)", path);
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    open_.emplace_front(file, std::make_shared<Descriptor>(fd));
    if (open_.size() > kOpen) open_.pop_back();
    return open_.front().second;
  }
  void forget(const ReadableFile* file) {
    std::lock_guard lock(mu_);
    open_.remove_if([&](const auto& e) { return e.first == file; });
  }

 private:
  static constexpr size_t kOpen = 64;
  std::mutex mu_;
  std::list<std::pair<const ReadableFile*, std::shared_ptr<Descriptor>>> open_;
};

class ReadableFile : public ReadableBytes {
 public:
  ReadableFile(std::string path, uint64_t size) : path_(std::move(path)), size_(size) {}
  ~ReadableFile() override { DescriptorCache::instance().forget(this); }
  uint64_t size() const override { return size_; }
  const std::string& name() const override { return path_; }
  Status read(uint64_t at, size_t n, void* dst) const override {
    if (at > size_ || n > size_ - at)
      return io_error("{}: {} bytes at byte {} run past its end ({} bytes)", path_, n, at, size_);
    ASSIGN_OR_RETURN(std::shared_ptr<Descriptor> d, DescriptorCache::instance().get(this, path_));
    return pread_exact(d->fd, at, n, dst, path_);
  }

 private:
  std::string path_;
  uint64_t size_;
};

class ReadableString : public ReadableBytes {
 public:
  ReadableString(std::string bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}
  uint64_t size() const override { return bytes_.size(); }
  const std::string& name() const override { return name_; }
  Status read(uint64_t at, size_t n, void* dst) const override {
    if (at > bytes_.size() || n > bytes_.size() - at)
      return io_error("{}: {} bytes at byte {} run past its end ({} bytes)", name_, n, at, bytes_.size());
    std::memcpy(dst, bytes_.data() + at, n);
    return Status::Ok();
  }

 private:
  std::string bytes_, name_;
};

}  // namespace

Result<std::shared_ptr<const ReadableBytes>> open_readable_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return io_error("cannot open {}: {}", path, std::strerror(errno));
  // A FIFO would block and a device may never end: data files are regular files.
  if (!S_ISREG(st.st_mode)) return io_error("{} is not a regular file", path);
  return std::shared_ptr<const ReadableBytes>(std::make_shared<ReadableFile>(path, static_cast<uint64_t>(st.st_size)));
}

std::shared_ptr<const ReadableBytes> readable_string(std::string bytes, std::string name) {
  return std::make_shared<ReadableString>(std::move(bytes), std::move(name));
}

Result<std::shared_ptr<SpoolFile>> SpoolFile::create(const std::string& what) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = tmp && *tmp ? tmp : "/tmp";
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // A file system without unnamed files: a named one, unlinked at once.
    std::string name = dir + "/ort_train_spool_XXXXXX";
    fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0) return io_error("cannot create a temporary file in {} for {}: {}", dir, what, std::strerror(errno));
  return std::shared_ptr<SpoolFile>(new SpoolFile(fd, fmt::format("{} (inflated into {})", what, dir)));
}

SpoolFile::~SpoolFile() { ::close(fd_); }

Status SpoolFile::read(uint64_t at, size_t n, void* dst) const {
  if (at > size_ || n > size_ - at) return io_error("{}: {} bytes at byte {} run past its end", name_, n, at);
  return pread_exact(fd_, at, n, dst, name_);
}

Status SpoolFile::append(const void* data, size_t n) {
  const char* in = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t put = ::pwrite(fd_, in, n, static_cast<off_t>(size_));
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return io_error("{}: write failed: {}", name_, std::strerror(errno));
    in += put;
    size_ += static_cast<uint64_t>(put);
    n -= static_cast<size_t>(put);
  }
  return Status::Ok();
}

uint64_t SpoolFile::free_bytes() const {
  struct statvfs vfs{};
  if (::fstatvfs(fd_, &vfs) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
}

}  // namespace ort_train
