// --tensorboard DIR: TensorBoard event files written by ort_train itself
// (training/tensorboard_event.proto; no TensorFlow). A file is a sequence of
// TFRecords, each an Event: the first names the format version, the others
// hold scalar summaries (loss, lr, ...) or text (the run's flags) at a step.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "graph/status.h"

namespace ort_train {

class TensorBoardWriter {
 public:
  // Creates `dir` if needed and a new events.out.tfevents.<seconds>.<host> file in it.
  static Result<std::unique_ptr<TensorBoardWriter>> open(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  const std::string& path() const { return path_; }
  Status scalar(const std::string& tag, double value, int64_t step);
  Status text(const std::string& tag, const std::string& text, int64_t step);
  // Makes what was written readable now (TensorBoard reads files as they
  // grow): each record is written unbuffered, so there is nothing to do.
  Status flush() { return Status::Ok(); }

 private:
  TensorBoardWriter() = default;
  Status write_record(const std::string& event_bytes);
  std::string path_;
  int fd_ = -1;
};

// CRC-32C (Castagnoli), as TFRecord frames use it, and TFRecord's masking of it.
uint32_t crc32c(const void* data, size_t n);
uint32_t masked_crc32c(const void* data, size_t n);

}  // namespace ort_train
