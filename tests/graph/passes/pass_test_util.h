// Helpers for the graph pass tests: build small graphs, apply one pass, run a
// model on the CPU to compare its outputs before and after a rewrite.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/graph_index.h"
#include "graph/passes/pass.h"
#include "test_util.h"

namespace ort_train::testing {

inline Model empty_model() {
  Model m;
  m.opset_imports = {{"", 17}};
  return m;
}

inline void add_input(Graph& g, const std::string& name, DType dtype, Dims dims) {
  g.inputs.push_back({name, dtype, shape_from_dims(dims), ""});
  g.values[name] = g.inputs.back();
}

inline void add_output(Graph& g, const std::string& name) { g.outputs.push_back({name, DType::kUndefined, std::nullopt, ""}); }

inline void add_initializer(Graph& g, const std::string& name, Tensor t) {
  g.values[name] = ValueInfo{name, t.dtype(), shape_from_dims(t.dims()), ""};
  g.initializers[name] = std::move(t);
  g.initializer_order.push_back(name);
}

inline Node node(const std::string& name, const std::string& op, std::vector<std::string> inputs,
                 std::vector<std::string> outputs, std::vector<Attribute> attributes = {}) {
  return Node{name, op, "", std::move(inputs), std::move(outputs), std::move(attributes), ""};
}

inline size_t count_op(const Model& m, const std::string& op) {
  size_t n = 0;
  for (const Node& x : m.graph.nodes) n += x.op_type == op;
  return n;
}

// Applies the registered pass `name`; REQUIREs success. `changed` receives
// PassContext::changed; `shapes_bound` and `precision` are PassContext's (a
// training graph's; --precision's).
inline bool apply_pass(const std::string& name, Model& m, const std::set<std::string>& pinned = {},
                       int64_t* changed = nullptr, bool shapes_bound = false, DType precision = DType::kFloat) {
  auto pass = PassRegistry::instance().create(name);
  REQUIRE(pass != nullptr);
  PassContext ctx;
  ctx.pinned = pinned;
  ctx.shapes_bound = shapes_bound;
  ctx.precision = precision;
  auto r = pass->apply(m, ctx);
  INFO(r.status().message());
  REQUIRE(r.ok());
  Status valid = verify_graph(m.graph);
  INFO(valid.message());
  REQUIRE(valid.ok());
  if (changed) *changed = ctx.changed;
  return *r;
}

// The graph outputs of `m` for `feeds`, computed by the CPU executor on a
// copy (shape inference runs on the copy, so `m` itself is not touched).
inline std::map<std::string, Tensor> run_model(const Model& m, const std::map<std::string, Tensor>& feeds = {},
                                               const RunOptions& options = {}) {
  Model copy = m;
  Status inferred = infer_shapes(copy);
  INFO(inferred.message());
  REQUIRE(inferred.ok());
  auto ex = Executor::create(copy);
  INFO(ex.status().message());
  REQUIRE(ex.ok());
  auto out = (*ex)->run(feeds, options);
  INFO(out.status().message());
  REQUIRE(out.ok());
  std::map<std::string, Tensor> result;
  for (const auto& [name, t] : *out) result[name] = t.clone();  // detached from the executor's allocator
  return result;
}

inline void require_same_outputs(const std::map<std::string, Tensor>& after,
                                 const std::map<std::string, Tensor>& before) {
  REQUIRE(after.size() == before.size());
  for (const auto& [name, t] : before) {
    INFO("output " << name);
    REQUIRE(after.count(name) == 1);
    require_close(after.at(name), t, 0, 0);
  }
}

}  // namespace ort_train::testing
