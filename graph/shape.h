// Static shapes in the IR: each dim is a known size, a named symbol
// ("batch", "seq") or unknown. A value whose rank is unknown has no Shape at all
// (std::optional<Shape> is empty).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/tensor.h"

namespace ort_train {

struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string symbol;  // set when the size is a named symbol
  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT(implicit): dims read naturally as numbers
  explicit Dim(std::string s) : symbol(std::move(s)) {}
  bool known() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  std::string to_string() const { return known() ? std::to_string(value) : (symbol.empty() ? "?" : symbol); }
};

using Shape = std::vector<Dim>;
using OptShape = std::optional<Shape>;

inline Shape shape_from_dims(const Dims& d) { return Shape(d.begin(), d.end()); }
inline bool shape_fully_known(const Shape& s) {
  for (const Dim& d : s)
    if (!d.known()) return false;
  return true;
}
inline Dims dims_from_shape(const Shape& s) {
  Dims d;
  for (const Dim& x : s) d.push_back(x.value);
  return d;
}
std::string shape_to_string(const OptShape& s);

}  // namespace ort_train
