#include "training/metrics_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "graph/atomic_file.h"

namespace ort_train {
namespace {

bool is_regular(const std::string& path, bool follow) {
  struct stat st {};
  return (follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) == 0 && S_ISREG(st.st_mode);
}

// The lines of a resumed run up to its checkpoint: the interrupted run's
// stream if it left one (a regular file at the .partial name, not whatever
// else is planted there), else the last complete file.
std::string kept_lines(const std::string& path, const std::string& partial, int64_t resumed_step, int64_t& lines) {
  std::string source = is_regular(partial, false) ? partial : is_regular(path, true) ? path : "";
  if (source.empty()) return "";
  std::ifstream prior(source);
  std::string kept;
  for (std::string line; std::getline(prior, line);) {
    auto row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_object() && row.contains("step") && row["step"].is_number_integer() &&
        row["step"].get<int64_t>() <= resumed_step) {
      kept += line + "\n";
      ++lines;
    }
  }
  return kept;
}

}  // namespace

Result<std::unique_ptr<MetricsFile>> MetricsFile::open(const std::string& path, int64_t resumed_step) {
  auto m = std::make_unique<MetricsFile>();
  m->path_ = path;
  m->partial_ = path + ".partial";
  // /dev/stdout (a link), /dev/null, a FIFO: written through as they are,
  // never replaced by a renamed regular file (as root, a rename over
  // /dev/null would replace the device, and one over /dev/stdout the link).
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    m->direct_ = true;
    m->partial_ = path;
    m->fd_ = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NONBLOCK);
    if (m->fd_ < 0)
      return io_error("cannot write metrics to {}: {}", path,
                      errno == ENXIO ? "it is a FIFO no process reads" : std::strerror(errno));
    ::fcntl(m->fd_, F_SETFL, ::fcntl(m->fd_, F_GETFL) & ~O_NONBLOCK);  // opened without waiting; written with waiting
    return m;
  }
  std::string kept = resumed_step > 0 ? kept_lines(path, m->partial_, resumed_step, m->lines_) : "";
  // A run folder that does not exist yet is made, as --checkpoint-dir's is.
  std::error_code dir_ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, dir_ec);
  auto fd = create_new_file(m->partial_);
  if (!fd.ok())
    return io_error("cannot write metrics: {}{}", fd.status().message(),
                    dir_ec ? "; cannot create its folder: " + dir_ec.message() : "");
  m->fd_ = *fd;
  RETURN_IF_ERROR(write_all(m->fd_, kept.data(), kept.size(), m->partial_));
  return m;
}

Status MetricsFile::write_line(const std::string& json_object) {
  std::string line = json_object + "\n";
  RETURN_IF_ERROR(write_all(fd_, line.data(), line.size(), partial_).with_context("metrics"));
  ++lines_;
  return Status::Ok();
}

Status MetricsFile::finish() {
  int fd = fd_;
  fd_ = -1;
  if (fd >= 0 && ::close(fd) != 0) return io_error("failed writing metrics to {}: {}", partial_, std::strerror(errno));
  finished_ = direct_;
  if (direct_) return Status::Ok();
  std::error_code ec;
  std::filesystem::rename(partial_, path_, ec);
  if (ec) return io_error("cannot rename {} to {}: {}", partial_, path_, ec.message());
  finished_ = true;
  return Status::Ok();
}

MetricsFile::~MetricsFile() {
  if (fd_ >= 0) ::close(fd_);
  if (finished_ || lines_ > 0 || direct_) return;
  std::error_code ec;
  std::filesystem::remove(partial_, ec);
}

}  // namespace ort_train
