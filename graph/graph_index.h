// Who produces and who reads each value of a Graph, and the rewrites passes
// need (rewire uses, remove nodes, insert a node) done so that the index, the
// graph's topological order and its graph outputs stay valid.
//
// The index refers to nodes by position in graph.nodes. Rewires update it in
// place; removing or inserting a node shifts positions, so those rebuild it
// (O(nodes + edges)); passes batch removals into one remove_nodes call.
// Edits made to the graph behind the index's back need a rebuild().
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"

namespace ort_train {

class GraphIndex {
 public:
  // One read of a value: input `slot` of node `node`.
  struct Use {
    size_t node = 0;
    size_t slot = 0;
    bool operator==(const Use&) const = default;
  };

  explicit GraphIndex(Graph& graph);

  Graph& graph() { return graph_; }
  const Graph& graph() const { return graph_; }

  // Position of the node that outputs `value`, or none (initializer, graph input, unknown).
  std::optional<size_t> producer(const std::string& value) const;
  // Every node input that reads `value`, in node order.
  const std::vector<Use>& consumers(const std::string& value) const;
  bool is_graph_output(const std::string& value) const { return graph_outputs_.count(value) > 0; }
  bool is_graph_input(const std::string& value) const { return graph_inputs_.count(value) > 0; }
  // Read by a node or returned by the graph.
  bool is_used(const std::string& value) const { return !consumers(value).empty() || is_graph_output(value); }

  // Makes every node input that reads `from` read `to` instead (the caller
  // knows the two hold the same tensor). `to` must exist (node output,
  // initializer or graph input) and be produced before every reader of `from`.
  //
  // Graph outputs keep their names: callers (the trainer, saved files) find
  // outputs by name. When `from` is a graph output produced by a node, that
  // node's output is renamed to a fresh name (so it is now dead and can be
  // removed) and an Identity node `to -> from` is appended at the end of the
  // graph. We chose the Identity over renaming `to` into `from` because a
  // rename would change a name callers may hold (a loss, a gradient, another
  // output), and Identity is a view in the executor: it costs no copy. When
  // `from` is a graph output without a producer (initializer, graph input) it
  // simply stays an output.
  Status replace_all_uses(const std::string& from, const std::string& to);

  // Removes the nodes at these positions (any order, duplicates and positions
  // past the end ignored), keeping the others in their order, so topological
  // order is kept. The caller removes only nodes whose outputs nothing reads
  // any more (verify_graph catches a mistake). Values they produced are left
  // in graph.values (the pass manager's sync_value_infos drops them).
  void remove_nodes(const std::vector<size_t>& positions);

  // Inserts `node` before position `position` (graph.nodes.size() appends).
  // Refuses, with the reason, a node whose inputs are not available before that
  // position or whose outputs already exist or are read earlier.
  Status insert_node(size_t position, Node node);

  // A value name used nowhere in the graph, derived from `base`.
  std::string fresh_value_name(const std::string& base) const;
  // A node name no node has, derived from `base`.
  std::string fresh_node_name(const std::string& base) const;

  // Recomputes everything from the graph.
  void rebuild();
  // How many indexes were built or rebuilt in this process: what a test of
  // the pass manager counts (a graph's index costs O(nodes + edges) in
  // strings; on a 100k-node graph, built per pass, it was most of the build).
  static int64_t builds();

 private:
  bool value_exists(const std::string& name) const;

  Graph& graph_;
  std::unordered_map<std::string, size_t> producer_;
  std::unordered_map<std::string, std::vector<Use>> consumers_;
  std::unordered_set<std::string> graph_inputs_;
  std::unordered_set<std::string> graph_outputs_;
};

// Removes the nodes at these positions (any order, duplicates and positions
// past the end ignored), keeping the others in their order. For a pass that
// holds no index: an index of `graph` is stale afterwards.
void erase_nodes(Graph& graph, const std::vector<size_t>& positions);

// Whether `graph` is well formed for a pass to hand on: each value has at
// most one producer and is not also an initializer, every node input is an
// initializer, a graph input or the output of an earlier node, and every graph
// output is provided. The error names the first offending node or value.
Status verify_graph(const Graph& graph);

}  // namespace ort_train
