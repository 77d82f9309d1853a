// What a pass that adds values and nodes to a graph needs to name and type
// them: names no value, initializer or node has yet, and a value declared as
// another one with another element type (autocast's casts, half_activations'
// 16-bit results).
#pragma once
#include <string>
#include <unordered_set>

#include "graph/graph.h"

namespace ort_train {

class FreshNames {
 public:
  explicit FreshNames(const Graph& g) {
    for (const auto& [name, v] : g.values) taken_.insert(name);
    for (const auto& [name, t] : g.initializers) taken_.insert(name);
    for (const Node& n : g.nodes) {
      taken_.insert(n.name);
      taken_.insert(n.outputs.begin(), n.outputs.end());
    }
  }
  // `base`, or base_2, base_3, ...: the first not taken, which is taken from then on.
  std::string operator()(const std::string& base) {
    std::string name = base;
    for (int i = 2; taken_.count(name); ++i) name = base + "_" + std::to_string(i);
    taken_.insert(name);
    return name;
  }

 private:
  std::unordered_set<std::string> taken_;
};

// Declares `name` as `like` with element type `dtype`: like's shape where the
// graph knows it, else left for shape inference.
inline void declare_like(Graph& g, const std::string& name, const std::string& like, DType dtype) {
  ValueInfo info;
  if (const ValueInfo* v = g.value(like)) info.shape = v->shape;
  info.name = name;
  info.dtype = dtype;
  g.values[name] = std::move(info);
}

}  // namespace ort_train
