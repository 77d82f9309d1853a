#include "apps/metrics_file.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ort_train::app {

Result<std::unique_ptr<MetricsFile>> MetricsFile::open(const std::string& path, int64_t resumed_step) {
  auto m = std::make_unique<MetricsFile>();
  m->path_ = path;
  m->partial_ = path + ".partial";
  // /dev/stdout (a link), /dev/null, a FIFO: written through as they are,
  // never replaced by a renamed regular file (as root, a rename over
  // /dev/null would replace the device, and one over /dev/stdout the link).
  std::error_code st_ec;
  auto status = std::filesystem::symlink_status(path, st_ec);
  if (!st_ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status) &&
      !std::filesystem::is_directory(status)) {
    m->direct_ = true;
    m->partial_ = path;
    m->out_.open(path, std::ios::out);
    if (!m->out_) return io_error("cannot write metrics to {}", path);
    return m;
  }
  std::string kept;
  if (resumed_step > 0) {
    // The interrupted run's stream if it left one, else the last complete file.
    std::error_code ec;
    std::ifstream prior(std::filesystem::exists(m->partial_, ec) ? m->partial_ : path);
    for (std::string line; std::getline(prior, line);) {
      auto row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (row.is_object() && row.contains("step") && row["step"].is_number_integer() &&
          row["step"].get<int64_t>() <= resumed_step) {
        kept += line + "\n";
        ++m->lines_;
      }
    }
  }
  // A run folder that does not exist yet is made, as --checkpoint-dir's is.
  std::error_code dir_ec;
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, dir_ec);
  m->out_.open(m->partial_, std::ios::trunc);
  if (!m->out_)
    return io_error("cannot write metrics to {}{}", m->partial_, dir_ec ? ": cannot create its folder: " + dir_ec.message() : "");
  m->out_ << kept;
  return m;
}

Status MetricsFile::write_line(const std::string& json_object) {
  out_ << json_object << "\n";
  out_.flush();
  ++lines_;
  if (!out_) return io_error("failed writing metrics to {}", partial_);
  return Status::Ok();
}

Status MetricsFile::finish() {
  out_.close();
  if (!out_) return io_error("failed writing metrics to {}", partial_);
  finished_ = direct_;
  if (direct_) return Status::Ok();
  std::error_code ec;
  std::filesystem::rename(partial_, path_, ec);
  if (ec) return io_error("cannot rename {} to {}: {}", partial_, path_, ec.message());
  finished_ = true;
  return Status::Ok();
}

MetricsFile::~MetricsFile() {
  if (finished_ || lines_ > 0 || direct_) return;
  out_.close();
  std::error_code ec;
  std::filesystem::remove(partial_, ec);
}

}  // namespace ort_train::app
