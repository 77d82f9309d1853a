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
  LoraPlan* lora = nullptr;         // PassContext::lora
  RecomputePlan* recompute = nullptr;  // PassContext::recompute
  // The phase this run is (graph/passes/pass.h): the listed passes of other
  // phases are left out of it, its required passes put first.
  PassPhase phase = kForwardPhase;
};

struct PassStats {
  int64_t runs = 0;
  int64_t changed = 0;  // PassContext::changed summed over the runs
  std::vector<std::string> matched;  // PassContext::note lines of every run
};

struct PassReport {
  std::map<std::string, PassStats> passes;  // every enabled pass, by name
  // Passes left out because another that runs in this build replaces them:
  // "bias_gelu_fusion (replaced by half_activations)".
  std::vector<std::string> replaced;
  int64_t rounds = 0;
  bool fixed_point = false;  // the last round changed nothing (false: stopped at max_rounds)
  // One line per pass, for logs: "constant_folding: 2 runs, 5 changed".
  std::string summary() const;
};

// The passes a run of `options.phase` makes, in order: the phase's required
// passes first (ordered by their `after`), then the listed ones of the phase
// as listed, less the disabled and the replaced (PassOrder::replaces, by a
// pass that runs in a phase of this build: kPrecisionPhase runs only when
// options.precision is 16-bit, kAdapterPhase only with options.lora,
// kRecomputePhase only with options.recompute). Unknown names are an error listing the known
// ones; an order that puts a pass before one it declares it must follow is
// an error naming both.
Result<std::vector<std::string>> plan_passes(const PassManagerOptions& options,
                                             std::vector<std::string>* replaced = nullptr);

// Runs the planned passes (plan_passes) on `model` with `pinned` as
// PassContext::pinned (the trainable initializers, which the passes must keep
// as they are). Names and order are checked before anything runs. After each pass the graph is checked
// (verify_graph): a pass that breaks it is an internal error naming the pass.
// On return graph.values describes exactly the values left in the graph
// (entries of removed values dropped, initializers typed from their tensors).
Result<PassReport> run_passes(Model& model, const std::set<std::string>& pinned,
                              const PassManagerOptions& options = {});

// Drops graph.values and declared_value_infos entries of values the graph no
// longer has, and types every initializer's entry from its tensor.
void sync_value_infos(Graph& graph);

}  // namespace ort_train
