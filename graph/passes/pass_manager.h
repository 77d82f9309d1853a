// Runs a list of registered passes over a model, round after round, until a
// round changes nothing (one pass's rewrite often enables another's: folding
// leaves dead initializers, merging leaves equal readers) or a cap on rounds
// is reached. The passes themselves live in graph/passes/<name>.cc.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/passes/pass.h"
#include "graph/status.h"

namespace ort_train {

// The passes run by default, in the order each round runs them: folding and
// elimination first, then the fusions, then shape_hoisting and
// memory_aware_order. The list is written once, in pass_manager.cc.
std::vector<std::string> default_pass_names();

struct PassManagerOptions {
  std::vector<std::string> passes = default_pass_names();  // run in this order each round
  std::set<std::string> disabled;  // names skipped (they must still be known passes)
  int64_t max_rounds = 10;
  // The value infos hold sizes bound for this build only (the description's
  // dims, as in a training graph): passes must not turn them into constants.
  bool shapes_bound = false;
  DType precision = DType::kFloat;  // PassContext::precision
};

struct PassStats {
  int64_t runs = 0;
  int64_t changed = 0;  // PassContext::changed summed over the runs
  std::vector<std::string> matched;  // PassContext::note lines of every run
};

struct PassReport {
  std::map<std::string, PassStats> passes;  // every enabled pass, by name
  int64_t rounds = 0;
  bool fixed_point = false;  // the last round changed nothing (false: stopped at max_rounds)
  // One line per pass, for logs: "constant_folding: 2 runs, 5 changed".
  std::string summary() const;
};

// Runs the enabled passes on `model` with `pinned` as PassContext::pinned (the
// trainable initializers, which the passes must keep as they are).
// Unknown names (in `passes` or `disabled`) are an error listing the known
// ones, reported before anything runs. After each pass the graph is checked
// (verify_graph): a pass that breaks it is an internal error naming the pass.
// On return graph.values describes exactly the values left in the graph
// (entries of removed values dropped, initializers typed from their tensors).
Result<PassReport> run_passes(Model& model, const std::set<std::string>& pinned,
                              const PassManagerOptions& options = {});

// Drops graph.values and declared_value_infos entries of values the graph no
// longer has, and types every initializer's entry from its tensor.
void sync_value_infos(Graph& graph);

}  // namespace ort_train
