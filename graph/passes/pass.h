// A graph pass: one rewrite of a Model (fold constants, drop dead code, merge
// duplicates) that reports whether it changed anything, so the pass manager
// can run a list of them to a fixed point. Each pass registers itself in its
// own file with ORT_REGISTER_PASS; there is no central list.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/graph_index.h"
#include "graph/status.h"

namespace ort_train {

struct LoraPlan;       // graph/passes/lora_adapters.h
struct RecomputePlan;  // training/recompute.h

struct PassContext {
  // Values a pass must never fold away, rename or remove: the trainable
  // initializers (which change every step, so are not constants), and any
  // other value the caller names. Graph inputs and outputs are always kept
  // whatever this says. The state training-step ops read (BatchNormalization's
  // running statistics) is protected without being listed: see protected_values.
  std::set<std::string> pinned;

  // Graph entries the pass changed: nodes added, removed or rewritten, plus
  // initializers added or removed on their own. Passes add to it (it is the
  // one field they write, hence mutable); the manager reads it back per pass.
  mutable int64_t changed = 0;
  void count(int64_t n) const { changed += n; }
  // What a rewriting pass matched, one line per match ("LayerNormalization
  // at /bert/embeddings/LayerNorm: 9 nodes -> 1"), for inspect's report.
  mutable std::vector<std::string> matched;
  void note(std::string line) const { matched.push_back(std::move(line)); }

  bool is_pinned(const std::string& value) const { return pinned.count(value) > 0; }

  // Whether known sizes in the value infos may be bound for this build only
  // (PassManagerOptions::shapes_bound): then no pass may fold one.
  bool shapes_bound = false;

  // What the autocast pass casts the forward's GEMMs to (--precision:
  // kBFloat16 or kFloat16); kFloat leaves them be.
  DType precision = DType::kFloat;
  // Whether autocast is still to run in this build (the forward phase of a
  // 16-bit one): constant folding then leaves unread a weight still mapped
  // from its file (graph/mapped_external_data.h), since autocast's Cast will
  // shrink what it folds into to 16 bits later; read and folded one at a time
  // then, the frozen float32 weights are never all in memory together.
  bool autocast_to_come = false;

  // The description's lora: what lora_adapters adds, and where it records
  // what it added; null without one.
  LoraPlan* lora = nullptr;

  // --recompute: what the recompute pass is asked for (its mode, the memory
  // budget, the training graph it plans steps of) and where it reports; null without.
  RecomputePlan* recompute = nullptr;

  // The index of `g` the passes of one run share: built on first use and kept
  // while passes change nothing, so a round that changes little indexes the
  // graph once rather than once per pass (a 100k-node graph took seconds per
  // index). A pass may edit through it (its edits keep it valid) or behind it;
  // the manager drops it after every pass that reports a change.
  GraphIndex& index(Graph& g) const;
  void drop_index() const { index_.reset(); }

 private:
  mutable std::shared_ptr<GraphIndex> index_;
};

// Values a pass must treat as variables: ctx.pinned, plus the initializers
// that training-step ops read as state (BatchNormalization's running
// statistics, optimizer state), which the trainer overwrites between steps
// even when the caller forgot to freeze them.
std::set<std::string> protected_values(const Graph& graph, const PassContext& ctx);

// Where in building a training graph a pass runs (bits of PassOrder::phases).
enum PassPhase : uint32_t {
  kForwardPhase = 1u << 0,    // the forward model, before the loss is appended
  kPrecisionPhase = 1u << 1,  // after the forward's fusions, once, with --precision bf16|fp16 only
  kBackwardPhase = 1u << 2,   // the whole training graph, after the backward
  kStepPhase = 1u << 3,       // the step graph the trainer runs (training/step_graph.h)
  kAdapterPhase = 1u << 4,    // first of all, once, with the description's lora: only (LoRA's adapters)
  kRecomputePhase = 1u << 5,  // after the backward's passes, once, with --recompute only (training/recompute.h)
};

// What a pass declares about its place among the others; the pass manager
// reads it, so no caller orders passes or resolves their conflicts by hand.
struct PassOrder {
  uint32_t phases = kForwardPhase | kBackwardPhase;  // the phases it runs in
  // Passes that must come before it in a round when both run. A list that
  // puts one after it is refused, naming both.
  std::vector<std::string> after = {};
  // Passes it replaces: when it runs in a phase of this build, they run in
  // none (each would undo what it needs), and the report says so.
  std::vector<std::string> replaces = {};
  // Runs in its phases whether listed or not (unless disabled): the build
  // needs it (loops unrolled before autodiff, autocast for --precision).
  bool required = false;
};

class Pass {
 public:
  virtual ~Pass();
  // The name the pass is registered and selected under ("constant_folding").
  virtual std::string name() const = 0;
  // Rewrites `model` in place; true when anything changed. On error the model
  // may be partly rewritten but is still a valid graph.
  virtual Result<bool> apply(Model& model, const PassContext& ctx) = 0;
  // True when one run reaches the pass's own fixed point (a second run right
  // after changes nothing): the manager then runs it again only after another
  // pass changed the graph. The built-in passes are; the default is not.
  virtual bool settles_in_one_run() const { return false; }
  // Its phases and its order among the others (the default: both graph
  // phases, no constraint).
  virtual PassOrder order() const { return {}; }
};

class PassRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Pass>()>;
  static PassRegistry& instance();
  // False (and the first registration kept) when the name is already taken.
  bool add(const std::string& name, Factory factory);
  // A new instance of the named pass, or nullptr when none has that name.
  std::unique_ptr<Pass> create(const std::string& name) const;
  // Registered names, sorted.
  std::vector<std::string> names() const;

 private:
  std::vector<std::pair<std::string, Factory>> factories_;
};

// Registers `Class` (default-constructible) under the name it reports.
#define ORT_REGISTER_PASS(Class)                                                                      \
  static const bool ORT_CONCAT(_pass_registered_, __LINE__) = ::ort_train::PassRegistry::instance().add( \
      Class().name(), [] { return std::unique_ptr<::ort_train::Pass>(new Class()); })

}  // namespace ort_train
