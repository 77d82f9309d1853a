// Runs of one executor on one set of feeds, each timed to its end (a GPU's
// queue drained, not just its last launch), with an optional profile per op
// type: what `run --repeat/--profile` and `train --repeat/--profile` report.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "runtime/executor.h"

namespace ort_train {

struct TimedRuns {
  std::map<std::string, Tensor> outputs;  // the last run's, where they were computed
  std::vector<double> ms;                 // each run's wall time, sorted
  std::map<std::string, double> op_ms;    // per op type, summed over the profiled runs
  std::map<std::string, double> op_shape_ms;  // per op type and input shapes, likewise
  int profiled_runs = 0;
  double median_ms() const { return ms.empty() ? 0.0 : ms[ms.size() / 2]; }
};

// `repeat` runs with `options`. With `profile`, each op type's time is summed;
// when there are several runs the first is a warm-up left out of the profile:
// it carries one-time costs (cuBLAS's start, kernel choices) that are no op's.
Result<TimedRuns> run_timed(Executor& executor, const std::map<std::string, Tensor>& feeds, RunOptions options,
                            int repeat, bool profile);

}  // namespace ort_train
