// The profile that `run --profile` and `train --profile` print: the time per
// op type, then the costliest op types at their input shapes (the nodes that
// one Conv or MatMul row is made of, which is where a model's time hides).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "apps/commands.h"

namespace ort_train::app {

namespace {

// Rows of `ms` (summed over `runs`), the largest first, at most `limit`.
void print_rows(const std::map<std::string, double>& ms, int runs, const char* header, size_t limit) {
  std::vector<std::pair<double, std::string>> rows;
  double total = 0;
  for (const auto& [key, t] : ms) {
    rows.emplace_back(t, key);
    total += t;
  }
  std::sort(rows.rbegin(), rows.rend());
  rows.resize(std::min(rows.size(), limit));
  int width = std::max(28, static_cast<int>(std::strlen(header)));
  for (const auto& row : rows) width = std::max(width, static_cast<int>(row.second.size()));
  std::printf("%-*s %12s %7s\n", width, header, "ms/run", "share");
  for (const auto& [t, key] : rows)
    std::printf("%-*s %12.3f %6.1f%%\n", width, key.c_str(), t / std::max(runs, 1), total > 0 ? 100 * t / total : 0.0);
}

}  // namespace

void print_op_profile(const TimedRuns& runs) {
  print_rows(runs.op_ms, runs.profiled_runs, "op", runs.op_ms.size());
  constexpr size_t kCostliest = 15;
  std::printf("\n");
  print_rows(runs.op_shape_ms, runs.profiled_runs, "op and input shapes (costliest)", kCostliest);
}

}  // namespace ort_train::app
