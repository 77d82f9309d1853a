// The per-op-type timing table that `run --profile` and `train --profile` print.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "apps/commands.h"

namespace ort_train::app {

void print_op_profile(const std::map<std::string, double>& op_ms, int runs) {
  std::vector<std::pair<double, std::string>> rows;
  double total = 0;
  for (const auto& [op, ms] : op_ms) {
    rows.emplace_back(ms, op);
    total += ms;
  }
  std::sort(rows.rbegin(), rows.rend());
  std::printf("%-28s %12s %7s\n", "op", "ms/run", "share");
  for (const auto& [ms, op] : rows)
    std::printf("%-28s %12.3f %6.1f%%\n", op.c_str(), ms / std::max(runs, 1), total > 0 ? 100 * ms / total : 0.0);
}

}  // namespace ort_train::app
