#include "graph/passes/pass.h"

#include <algorithm>

#include "graph/passes/op_traits.h"

namespace ort_train {

Pass::~Pass() = default;

GraphIndex& PassContext::index(Graph& g) const {
  if (!index_ || &index_->graph() != &g) index_ = std::make_shared<GraphIndex>(g);
  return *index_;
}

std::set<std::string> protected_values(const Graph& graph, const PassContext& ctx) {
  std::set<std::string> out = ctx.pinned;
  for (const Node& n : graph.nodes)
    if (is_training_step_op(n))
      for (const std::string& in : n.inputs)
        if (graph.is_initializer(in)) out.insert(in);
  return out;
}

PassRegistry& PassRegistry::instance() {
  static PassRegistry registry;
  return registry;
}

bool PassRegistry::add(const std::string& name, Factory factory) {
  for (const auto& [n, f] : factories_)
    if (n == name) return false;
  factories_.emplace_back(name, std::move(factory));
  return true;
}

std::unique_ptr<Pass> PassRegistry::create(const std::string& name) const {
  for (const auto& [n, f] : factories_)
    if (n == name) return f();
  return nullptr;
}

std::vector<std::string> PassRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [n, f] : factories_) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ort_train
