// --metrics: one JSON object per line, written as the run goes. The lines go
// to "<path>.partial" (which `tail -f` can follow) and replace <path> only
// when the run ends well, so a crash never leaves a partial file where a
// complete one was. A resumed run starts from the lines of the run it
// continues, up to the resumed step (lines past it were never checkpointed).
#pragma once
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "graph/status.h"

namespace ort_train::app {

class MetricsFile {
 public:
  static Result<std::unique_ptr<MetricsFile>> open(const std::string& path, int64_t resumed_step);
  Status write_line(const std::string& json_object);
  // Closes the stream and renames "<path>.partial" over <path>.
  Status finish();
  // A run that ends before finish() keeps its partial lines for a look (and
  // a resume), but leaves no empty "<path>.partial" behind.
  ~MetricsFile();
  const std::string& path() const { return path_; }

 private:
  std::string path_, partial_;
  std::ofstream out_;
  int64_t lines_ = 0;  // in the partial file, kept ones included
  bool finished_ = false;
};

}  // namespace ort_train::app
