// shape_folding: exporters' shape arithmetic reads sizes through Shape, and a
// size that the inferred shape already knows is a constant: Shape(x) when
// every dim it returns is known, and Gather or Slice of a Shape(x) when the
// dims they pick are (x.size(-1) of a [batch, seq, 768] tensor is 768 whatever
// batch and seq are). Each becomes an int64 initializer under its output's
// name; constant_folding then folds what reads it (GPT-2's attention scale,
// sqrt(head_dim), so that matmul_scale_fusion can take it) and
// dead_code_elimination drops the Shape nodes nobody reads any more.
//
// Only sizes the model itself fixes: not in a graph whose shapes hold the
// description's dims bound for one build (PassContext::shapes_bound, the
// training graph after its backward), where a folded batch size would be
// wrong for the next batch of another size.
#include <fmt/format.h>

#include "graph/graph_index.h"
#include "graph/op_schema.h"
#include "graph/passes/pass.h"

namespace ort_train {
namespace {

// The dims Shape(x) returns (its start/end attributes applied), when x's rank is known.
std::optional<Shape> shape_output(const Graph& g, const Node& shape_node) {
  const ValueInfo* v = g.value(shape_node.inputs[0]);
  if (!v || !v->shape) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(v->shape->size());
  auto clamp = [rank](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank); };
  int64_t start = clamp(shape_node.attr_int("start", 0)), end = clamp(shape_node.attr_int("end", rank));
  if (end < start) end = start;
  return Shape(v->shape->begin() + start, v->shape->begin() + end);
}

std::optional<std::vector<int64_t>> int_constant(const Graph& g, const std::string& name) {
  auto it = g.initializers.find(name);
  if (it == g.initializers.end()) return std::nullopt;
  const Tensor& t = it->second;
  if (t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) return std::nullopt;
  std::vector<int64_t> out;  // read as integers: INT64_MAX, Slice's "to the end", is no double
  for (int64_t k = 0; k < t.numel(); ++k)
    out.push_back(t.dtype() == DType::kInt64 ? t.data<int64_t>()[k] : t.data<int32_t>()[k]);
  return out;
}

class ShapeFolding : public Pass {
 public:
  std::string name() const override { return "shape_folding"; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    if (ctx.shapes_bound) return false;
    Graph& g = model.graph;
    GraphIndex& index = ctx.index(g);
    std::set<std::string> keep = protected_values(g, ctx);
    for (const ValueInfo& v : g.inputs) keep.insert(v.name);
    for (const ValueInfo& v : g.outputs) keep.insert(v.name);
    std::vector<size_t> folded;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      if (!n.domain.empty() || n.outputs.size() != 1 || n.outputs[0].empty() || keep.count(n.outputs[0])) continue;
      std::optional<Shape> dims;  // the sizes the node returns, when it reads a Shape
      bool scalar = false;
      if (n.op_type == "Shape" && n.inputs.size() == 1) {
        dims = shape_output(g, n);
      } else if ((n.op_type == "Gather" || n.op_type == "Slice") && n.inputs.size() >= 2) {
        auto p = index.producer(n.inputs[0]);
        const Node* s = p ? &g.nodes[*p] : nullptr;
        if (!s || s->op_type != "Shape" || !s->domain.empty() || s->inputs.size() != 1) continue;
        auto source = shape_output(g, *s);
        if (!source) continue;
        const int64_t len = static_cast<int64_t>(source->size());
        if (n.op_type == "Gather") {
          if (n.attr_int("axis", 0) != 0) continue;
          auto it = g.initializers.find(n.inputs[1]);
          auto idx = int_constant(g, n.inputs[1]);
          if (!idx || it->second.dims().size() > 1) continue;
          scalar = it->second.dims().empty();
          Shape picked;
          bool in_range = true;
          for (int64_t k : *idx) {
            int64_t j = k < 0 ? k + len : k;
            in_range = in_range && j >= 0 && j < len;
            if (in_range) picked.push_back((*source)[static_cast<size_t>(j)]);
          }
          if (!in_range) continue;  // the node's own check reports it at run time
          dims = picked;
        } else {
          if (model.opset("") < 10) continue;  // starts/ends were attributes
          auto starts = int_constant(g, n.inputs[1]);
          auto ends = n.inputs.size() > 2 ? int_constant(g, n.inputs[2]) : std::nullopt;
          std::optional<std::vector<int64_t>> axes, steps;
          if (n.inputs.size() > 3 && !n.inputs[3].empty()) axes = int_constant(g, n.inputs[3]);
          if (n.inputs.size() > 4 && !n.inputs[4].empty()) steps = int_constant(g, n.inputs[4]);
          if (!starts || !ends || starts->size() != 1 || ends->size() != 1) continue;
          if ((n.inputs.size() > 3 && !n.inputs[3].empty() && (!axes || *axes != std::vector<int64_t>{0}) &&
               (!axes || *axes != std::vector<int64_t>{-1})) ||
              (n.inputs.size() > 4 && !n.inputs[4].empty() && (!steps || *steps != std::vector<int64_t>{1})))
            continue;
          auto clamp = [len](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + len : v, 0, len); };
          int64_t b = clamp((*starts)[0]), e = clamp((*ends)[0]);
          dims = Shape(source->begin() + b, source->begin() + std::max(b, e));
        }
      } else {
        continue;
      }
      if (!dims || !shape_fully_known(*dims)) continue;
      std::vector<int64_t> values;
      for (const Dim& d : *dims) values.push_back(d.value);
      Tensor t = scalar ? Tensor::from_vector<int64_t>({}, values)
                        : Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
      const std::string& out = n.outputs[0];
      g.values[out] = ValueInfo{out, DType::kInt64, shape_from_dims(t.dims()), ""};
      g.initializers[out] = std::move(t);
      g.initializer_order.push_back(out);
      ctx.note(fmt::format("{} ({}): {}", n.name, n.op_type, fmt::join(values, ", ")));
      folded.push_back(i);
    }
    index.remove_nodes(folded);
    ctx.count(static_cast<int64_t>(folded.size()));
    return !folded.empty();
  }
};

ORT_REGISTER_PASS(ShapeFolding);

}  // namespace
}  // namespace ort_train
