#include "training/checkpoint_writer.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

namespace ort_train {
namespace fs = std::filesystem;

Status write_checkpoint_into(const Checkpoint& c, const std::string& dir, int keep, const std::string& how) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot create {}: {}", dir, ec.message());
  const std::string path = checkpoint_path(dir, c.step);
  auto started = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(write_checkpoint(c, path));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::vector<std::string> all = list_checkpoints(dir);
  for (size_t i = static_cast<size_t>(keep); i < all.size(); ++i) fs::remove(all[i], ec);
  // Its time is what a scheduler's early signal (Slurm's --signal=USR1@T) must leave room for.
  spdlog::info("checkpoint {} written ({:.1f} MiB in {:.2f} s{})", path,
               static_cast<double>(fs::file_size(path, ec)) / 1048576.0, seconds, how);
  return Status::Ok();
}

CheckpointWriter::~CheckpointWriter() {
  Status st = finish();
  if (!st.ok()) spdlog::error("{}", st.message());
}

Status CheckpointWriter::write(Checkpoint c) {
  RETURN_IF_ERROR(finish());
  if (!background_) return write_checkpoint_into(c, dir_, keep_, "");
  in_flight_ = std::async(std::launch::async, [c = std::move(c), dir = dir_, keep = keep_]() {
    Status st = write_checkpoint_into(c, dir, keep, ", in the background");
    return st.ok() ? st : st.with_context("the background checkpoint write failed");
  });
  return Status::Ok();
}

Status CheckpointWriter::finish() {
  if (!in_flight_.valid()) return Status::Ok();
  return in_flight_.get();
}

Status CheckpointWriter::poll() {
  if (!in_flight_.valid() || in_flight_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
    return Status::Ok();
  return in_flight_.get();
}

}  // namespace ort_train
