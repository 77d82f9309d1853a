// --metrics: one JSON object per line, written as the run goes. The lines go
// to "<path>.partial" (which `tail -f` can follow) and replace <path> only
// when the run ends well, so a crash never leaves a partial file where a
// complete one was. A resumed run starts from the lines of the run it
// continues, up to the resumed step (lines past it were never checkpointed).
// A path that exists and is no regular file (/dev/stdout, /dev/null, a FIFO,
// a link the user made) is written directly instead, opened without waiting
// (a FIFO nobody reads is an error, not a hang). The ".partial" name is
// ort_train's: whatever is planted there (a link, a FIFO) is replaced, never
// written through.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "graph/status.h"

namespace ort_train {

class MetricsFile {
 public:
  static Result<std::unique_ptr<MetricsFile>> open(const std::string& path, int64_t resumed_step);
  Status write_line(const std::string& json_object);
  // Closes the stream and renames "<path>.partial" over <path>.
  Status finish();
  // A run that ends before finish() keeps its partial lines for a look (and
  // a resume), but leaves no empty "<path>.partial" behind.
  ~MetricsFile();
  MetricsFile() = default;
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;
  const std::string& path() const { return path_; }
  bool direct() const { return direct_; }  // written in place: a device, FIFO or link
  int64_t lines() const { return lines_; }  // kept from the resumed run's, and written

 private:
  std::string path_, partial_;
  int fd_ = -1;
  int64_t lines_ = 0;  // in the partial file, kept ones included
  bool finished_ = false;
  bool direct_ = false;  // not a regular file (/dev/stdout, a FIFO): written in place, no .partial
};

}  // namespace ort_train
