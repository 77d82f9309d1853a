#include "runtime/timed_runs.h"

#include <algorithm>
#include <chrono>

namespace ort_train {

Result<TimedRuns> run_timed(Executor& executor, const std::map<std::string, Tensor>& feeds, RunOptions options,
                            int repeat, bool profile) {
  TimedRuns t;
  for (int i = 0; i < std::max(repeat, 1); ++i) {
    if (profile && (i > 0 || repeat == 1)) {
      options.op_time_ms = &t.op_ms;
      options.op_shape_time_ms = &t.op_shape_ms;
      ++t.profiled_runs;
    }
    auto started = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(t.outputs, executor.run(feeds, options));
    RETURN_IF_ERROR(executor.device().synchronize());
    t.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
  }
  std::sort(t.ms.begin(), t.ms.end());
  return t;
}

}  // namespace ort_train
