// Recompute (activation checkpointing) on a built training graph: a layer's
// activations that the backward reads are not kept from the forward but made
// again, by copies of the layer's forward nodes placed just before the first
// backward node that reads them, from what stays alive anyway (the layer's
// input, the parameters, the masks). Their buffers are then free between the
// forward and the layer's backward, which is where the peak is.
//
// Layers are found by name, as exporters scope them: the first path
// component of a node name that indexes a module list ("layer.3", "h.0",
// "layers.11", "block.2"; not "dropout_1", an exporter's mark of a module
// called again). The dynamo exporter's node names carry no scope; there the
// module path it keeps in each node's metadata is read instead. The copies
// compute exactly what the originals did (the same kernels on the same inputs); a Dropout is not drawn again but re-applied
// with the forward's mask (DropoutGrad's arithmetic, the forward's exactly),
// so losses are bit-identical with and without recompute. Random ops without
// a mask and training-mode BatchNormalization are never copied: their outputs
// stay alive.
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "autodiff/training_graph.h"

namespace ort_train {

enum class RecomputeMode { kNone, kCheap, kLayers, kAuto };

// "none", "cheap", "layers" or "auto"; an error lists them.
Result<RecomputeMode> parse_recompute_mode(const std::string& text);

struct RecomputeReport {
  std::vector<std::string> layers;      // every layer found, in forward order
  std::vector<std::string> recomputed;  // those whose activations are recomputed
  size_t copied_nodes = 0;              // forward nodes of layers copied into the backward
  size_t cheap_nodes = 0;               // cheap ops (GELU, LayerNorm...) and views of them copied into the backward
  size_t peak_before = 0, peak_after = 0;  // planned peak activation bytes
  bool complete = true;                 // whether both estimates know every shape
  bool fits = true;                     // auto: whether the plan fits the budget
};

// What the recompute pass is asked for (graph/passes/pass.h's
// PassContext::recompute), and where it reports what it did.
struct RecomputePlan {
  RecomputeMode mode = RecomputeMode::kNone;
  uint64_t budget_bytes = 0;        // weights plus planned peak activations allowed (0: none known)
  const TrainingGraph* tg = nullptr;  // whose model the pass rewrites: its eval outputs, gradients, loss
  RecomputeReport report;
};

// kCheap recomputes the outputs of cheap ops (GELU, SiLU, LayerNorm, RMSNorm...)
// whose inputs the backward keeps anyway, before their first backward reader.
// kLayers recomputes every layer. kAuto does what fits `budget_bytes` (weights
// plus planned peak activations) at the least cost: nothing when the plan
// fits already (the plan is a lower bound when some size depends on the
// data), else the cheap ops, then also layers from the first on (the first
// layer's activations live longest) until it fits. The
// graph is left unchanged for kNone or when no layer is found.
//
// The rewrite is the pass "recompute", the one pass of kRecomputePhase, run
// here through the pass manager (once; the manager checks the graph after
// it). `disabled` is --disable-pass's list: naming recompute there is an error.
Result<RecomputeReport> apply_recompute(TrainingGraph& tg, RecomputeMode mode, uint64_t budget_bytes,
                                        const std::set<std::string>& disabled = {});

// The layer scope of a node name ("/bert/encoder/layer.3/attention/..." ->
// "/bert/encoder/layer.3"), or "" when it has none.
std::string layer_scope(const std::string& node_name);
// A node's layer scope: from its name, else (a dynamo export, whose node
// names carry no scope) from the module path in its pkg.torch.onnx.name_scopes
// metadata ("model.bert.encoder.layer.3.attention" -> "model.bert.encoder.layer.3").
std::string layer_scope(const Node& node);
// The layer of a dotted module path, or "" when it has none.
std::string dotted_layer_scope(const std::string& module_path);

}  // namespace ort_train
