// Where a padded output position reads from, per mode: shared by Pad's kernel
// and its gradient (which adds each output's gradient back to that source).
#pragma once
#include <cstdint>
#include <string>

namespace ort_train {

// Source index along an axis of size n for output position j - begin (j outside [0, n)).
inline int64_t pad_source(int64_t j, int64_t n, const std::string& mode) {
  if (j >= 0 && j < n) return j;
  if (mode == "edge") return j < 0 ? 0 : n - 1;
  if (mode == "wrap") return ((j % n) + n) % n;
  // reflect: mirror without repeating the edge element, as numpy does for any width
  if (n == 1) return 0;
  int64_t period = 2 * (n - 1);
  int64_t m = ((j % period) + period) % period;
  return m < n ? m : period - m;
}

}  // namespace ort_train
