// If, Loop and Scan in the IR. A subgraph may read values of the graphs
// around it by name (outer scope). In memory every such read is made an
// explicit input: the node becomes com.ort_train If/Loop/Scan with the values
// it captures appended to its inputs (attribute `num_captures`), and each
// subgraph gains a formal input per capture, in the same order. So ordering,
// liveness, renaming passes and the planner see captures as ordinary inputs,
// and a subgraph is a function of its inputs only. Files hold the standard
// form: loading makes captures explicit, saving makes them implicit again.
//
// Operands, in the explicit form:
//   If(cond, captures...)            branches: inputs = captures
//   Loop(M, cond, v_initial..., captures...)  body: (iter, cond, v..., captures...)
//   Scan(state..., scan_inputs..., captures...) body: (state..., scan_elements..., captures...)
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace ort_train {

// The deepest nesting of subgraphs a file may have: a hostile file could
// otherwise recurse the parser off its stack (protobuf's own limit of 100
// message levels stops near 33 nestings); real exports nest two or three.
inline constexpr int kMaxSubgraphDepth = 16;

// The most trips a Loop may run, and the most steps a Scan may take over
// all its sequences (default 2^24): the kernel stops with an error past it (a
// file's loop whose condition never turns false; a scan over an empty tensor
// whose sequence axis is 2^40 long), and loop_unrolling leaves a longer Loop
// as it is. A caller may tighten it: the
// fuzz target runs hostile files' Loops with a few trips, not millions.
int64_t& max_loop_trips();
// The most trips of one outermost If/Loop/Scan counted with every trip of the
// bodies nested in it (two nested Loops each under max_loop_trips still made
// 2^48), and the most elements its trips may carry in all (a carried value
// that a Concat grows every trip copies quadratically): default 2^24 trips
// and 2^34 elements. The kernels count both at every trip.
int64_t& max_loop_elements();
// The most work one outermost If/Loop/Scan may do, its nested bodies'
// included (default 2^39 units): each trip bounded by the limits above could
// still multiply 512x512 matrices 10^5 times, or make 2^24 trivial trips for
// minutes. A unit is one element a body's kernel writes or one multiply-add
// of its MatMul/Gemm/Conv; every kernel run adds kNodeRunWork and every trip
// kTripWork, the dispatch that no element count sees (about 2^39 units run in
// a minute on a 2-core machine; a 512-step recurrence with 1024-wide gates at
// batch 64 is about 2^37). A Loop of fixed trip count, or a Scan, is refused
// after its first trip when its trips at that trip's work would pass the bound.
int64_t& max_loop_work();
inline constexpr int64_t kNodeRunWork = int64_t{1} << 15;
inline constexpr int64_t kTripWork = int64_t{1} << 16;

// com.ort_train If/Loop/Scan: a node in the explicit form.
bool is_control_flow(const Node& n);
// Default-domain If/Loop/Scan, as a file holds them.
bool is_onnx_control_flow(const Node& n);
int64_t num_captures(const Node& n);
// The default-domain opset the node's subgraphs were written for (attribute `onnx_opset`).
int64_t subgraph_opset(const Node& n);

// Names a graph reads that it does not define (its inputs, initializers and
// node outputs), in first-read order: what it captures from outer scopes.
std::vector<std::string> free_values(const Graph& g);

// A file's If/Loop/Scan (subgraphs already parsed, nested ones already
// explicit) in the explicit form. `onnx_opset` is the model's default-domain opset.
Status make_captures_explicit(Node& n, int64_t onnx_opset);
// The standard node a file holds: captures read from the outer scope again
// (a capture whose formal name differs is bound by an Identity at the
// subgraph's start).
Node with_implicit_captures(const Node& n);

// The subgraph attribute `name` of a control-flow node (then_branch,
// else_branch, body), or null.
std::shared_ptr<const Graph> subgraph(const Node& n, const std::string& name);

// A copy of `g` whose every name it defines (inputs, initializers, node
// outputs, node names) starts with `prefix`, nested subgraphs likewise. Two
// copies of one subgraph in a model (a branch recomputed by If's gradient, a
// body written out per trip) then keep ONNX's rule that a name is defined
// once in a model. Inputs are positional, so the copy computes the same.
std::shared_ptr<const Graph> with_prefixed_names(const Graph& g, const std::string& prefix);

// A subgraph as a model of its own, for shape inference and execution:
// formal inputs typed by `input_types` where given (dtype kUndefined keeps the
// declared type; shapes always come from `input_types`).
Model subgraph_model(const Graph& g, int64_t onnx_opset, const std::vector<ValueInfo>& input_types);

}  // namespace ort_train
