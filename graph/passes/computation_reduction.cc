// computation_reduction: a masked-language-model loss scores only the
// labelled positions (labels != ignore_index, about 15% of BERT's), yet the
// exported head projects every position onto the vocabulary first:
//   loss = SoftmaxCrossEntropyLoss(Reshape(h @ W + b, [-1, V]), Reshape(labels, [-1]))
// This pass gathers the labelled rows before the projection, as ONNX
// Runtime's ComputationReduction does:
//   idx  = Reshape(NonZero(Not(Equal(labels_flat, ignore_index))), [-1])
//   loss = SoftmaxCrossEntropyLoss(Gather(h_flat, idx) @ W + b, Gather(labels_flat, idx))
// The loss is the same (the ignored rows contributed nothing and were not
// counted by `mean`); the log-probabilities and their gradient shrink from
// [B*T, V] to [N, V], and the backward's vocabulary GEMMs from B*T rows to N.
// Where the full logits are also a model output they are still computed for
// it (with no gradient path any more); otherwise dead-code elimination drops
// them. Only a loss in the model itself (Hugging Face's exports) is seen:
// the pass runs before ort_train appends a described loss.
#include <fmt/format.h>

#include "graph/op_schema.h"
#include "graph/passes/pattern_match.h"

namespace ort_train {
namespace {

bool is_int_labels(std::optional<DType> t) { return t && (*t == DType::kInt64 || *t == DType::kInt32); }

class ComputationReduction : public Pass {
 public:
  std::string name() const override { return "computation_reduction"; }
  // It reads the described loss's labels before ort_train appends the loss.
  PassOrder order() const override { return {.phases = kForwardPhase}; }
  bool settles_in_one_run() const override { return true; }

  Result<bool> apply(Model& model, const PassContext& ctx) override {
    Graph& g = model.graph;
    GraphIndex& index = ctx.index(g);
    PatternMatcher pm(index, ctx, model.opset(""));
    int64_t rewritten = 0;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (g.nodes[i].op_type != "SoftmaxCrossEntropyLoss" || !g.nodes[i].domain.empty()) continue;
      auto plan = match(g.nodes[i], pm);
      if (!plan) continue;
      const std::string loss = g.nodes[i].outputs[0];
      RETURN_IF_ERROR(rewrite(model, index, i, *plan, ctx));
      ++rewritten;
      i = index.producer(loss).value_or(i);  // past the inserted nodes
    }
    ctx.count(rewritten);
    return rewritten > 0;
  }

 private:
  struct Plan {
    const Node* projection;  // h @ W (+ b): MatMul or FusedMatMul
    const Node* bias_add;    // a separate Add of the bias, or null
    std::string hidden, labels_flat;
    int64_t hidden_size, vocab;
  };

  static std::optional<Plan> match(const Node& sce, const PatternMatcher& pm) {
    if (sce.inputs.size() < 2 || !sce.attr("ignore_index")) return std::nullopt;
    std::string reduction = sce.attr("reduction") ? sce.attr("reduction")->s : "mean";
    if (reduction != "mean" && reduction != "sum") return std::nullopt;
    for (size_t o = 1; o < sce.outputs.size(); ++o)  // the log-probabilities must not be read
      if (!sce.outputs[o].empty() && pm.index().is_used(sce.outputs[o])) return std::nullopt;
    const Node* scores = pm.producer(sce.inputs[0], "Reshape", 2);
    if (!scores || pm.index().consumers(sce.inputs[0]).size() != 1 || pm.index().is_graph_output(sce.inputs[0]))
      return std::nullopt;
    if (pm.rank(sce.inputs[0]) != 2u || pm.rank(sce.inputs[1]) != 1u || !is_int_labels(pm.dtype(sce.inputs[1])))
      return std::nullopt;
    Plan p{};
    p.labels_flat = sce.inputs[1];
    std::string logits = scores->inputs[0];
    if (const Node* add = pm.producer(logits, "Add", 2)) {  // matmul_add_fusion disabled
      for (size_t k = 0; k < 2 && !p.projection; ++k)
        if (pm.rank(add->inputs[1 - k]) == 1u)
          if (const Node* mm = pm.producer(add->inputs[k], "MatMul", 2)) {
            p.projection = mm;
            p.bias_add = add;
          }
    } else {
      p.projection = pm.producer(logits, "MatMul", 2);
      if (!p.projection) p.projection = pm.fused_producer(logits, "FusedMatMul", 2);
    }
    if (!p.projection || p.projection->attr_int("transA", 0) != 0) return std::nullopt;
    p.hidden = p.projection->inputs[0];
    OptShape h = pm.shape(p.hidden), l = pm.shape(logits), w = pm.shape(p.projection->inputs[1]);
    // h [..., H] @ W [H, V] (2-D weights, so rows are independent); V the scores' last dim.
    if (!h || h->empty() || !h->back().known() || !w || w->size() != 2 || !l || l->empty() || !l->back().known())
      return std::nullopt;
    p.hidden_size = h->back().value;
    p.vocab = l->back().value;
    OptShape scores_shape = pm.shape(sce.inputs[0]);  // [rows, V]: the reshape keeps the vocabulary dim
    if (scores_shape && (*scores_shape)[1].value != p.vocab) return std::nullopt;
    return p;
  }

  // Adds `n` before position `at`, its outputs typed as given; returns its output.
  static Result<std::string> add(GraphIndex& index, size_t& at, const std::string& op, std::vector<std::string> inputs,
                                 const std::string& base, DType dtype, OptShape shape, std::vector<Attribute> attrs = {},
                                 const std::string& domain = "") {
    Graph& g = index.graph();
    Node n;
    n.name = index.fresh_node_name(base + "/" + op);
    n.op_type = op;
    n.domain = domain;
    n.inputs = std::move(inputs);
    n.outputs = {index.fresh_value_name(base + "/" + op + "_output")};
    n.attributes = std::move(attrs);
    std::string out = n.outputs[0];
    RETURN_IF_ERROR(index.insert_node(at, std::move(n)));
    ++at;
    g.values[out] = ValueInfo{out, dtype, std::move(shape), ""};
    return out;
  }

  static std::string add_constant(Graph& g, const GraphIndex& index, const std::string& base, Tensor t) {
    std::string name = index.fresh_value_name(base);
    g.values[name] = ValueInfo{name, t.dtype(), shape_from_dims(t.dims()), ""};
    g.initializers[name] = std::move(t);
    g.initializer_order.push_back(name);
    return name;
  }

  static Status rewrite(Model& model, GraphIndex& index, size_t sce_at, const Plan& p, const PassContext& ctx) {
    Graph& g = model.graph;
    const Node sce = g.nodes[sce_at];
    const Node projection = *p.projection;
    const std::optional<Node> bias_add = p.bias_add ? std::optional<Node>(*p.bias_add) : std::nullopt;
    std::string base = sce.name.substr(0, sce.name.rfind('/') == std::string::npos ? 0 : sce.name.rfind('/')) +
                       "/computation_reduction";
    DType label_type = g.value(p.labels_flat) ? g.value(p.labels_flat)->dtype : DType::kInt64;
    DType float_type = g.value(p.hidden)->dtype;
    int64_t ignore = sce.attr_int("ignore_index", -100);
    Tensor ignore_value = label_type == DType::kInt32
                              ? Tensor::from_vector<int32_t>({}, {static_cast<int32_t>(ignore)})
                              : Tensor::from_vector<int64_t>({}, {ignore});
    std::string ignore_c = add_constant(g, index, base + "/ignore_index", std::move(ignore_value));
    std::string flat_c = add_constant(g, index, base + "/flat", Tensor::from_vector<int64_t>({1}, {-1}));
    std::string rows_c =
        add_constant(g, index, base + "/rows", Tensor::from_vector<int64_t>({2}, {-1, p.hidden_size}));
    index.rebuild();
    size_t at = sce_at;
    Shape n{Dim()};
    ASSIGN_OR_RETURN(auto ignored, add(index, at, "Equal", {p.labels_flat, ignore_c}, base, DType::kBool, Shape{Dim()}));
    ASSIGN_OR_RETURN(auto labelled, add(index, at, "Not", {ignored}, base, DType::kBool, Shape{Dim()}));
    ASSIGN_OR_RETURN(auto coords, add(index, at, "NonZero", {labelled}, base, DType::kInt64, Shape{Dim(1), Dim()}));
    ASSIGN_OR_RETURN(auto idx, add(index, at, "Reshape", {coords, flat_c}, base, DType::kInt64, n));
    ASSIGN_OR_RETURN(auto rows, add(index, at, "Reshape", {p.hidden, rows_c}, base, float_type,
                                    Shape{Dim(), Dim(p.hidden_size)}));
    std::vector<Attribute> axis0 = {Attribute::make_int("axis", 0)};
    ASSIGN_OR_RETURN(auto picked, add(index, at, "Gather", {rows, idx}, base, float_type,
                                      Shape{Dim(), Dim(p.hidden_size)}, axis0));
    ASSIGN_OR_RETURN(auto labels, add(index, at, "Gather", {p.labels_flat, idx}, base, label_type, n, axis0));
    std::vector<std::string> proj_inputs = projection.inputs;
    proj_inputs[0] = picked;
    ASSIGN_OR_RETURN(auto logits, add(index, at, projection.op_type, proj_inputs, base, float_type,
                                      Shape{Dim(), Dim(p.vocab)}, projection.attributes, projection.domain));
    if (bias_add) {
      std::vector<std::string> add_inputs = bias_add->inputs;
      for (std::string& in : add_inputs)
        if (in == projection.outputs[0]) in = logits;
      ASSIGN_OR_RETURN(logits, add(index, at, "Add", add_inputs, base, float_type, Shape{Dim(), Dim(p.vocab)}));
    }
    Node& loss = g.nodes[at];  // the SoftmaxCrossEntropyLoss, now after the inserted nodes
    loss.inputs[0] = logits;
    loss.inputs[1] = labels;
    index.rebuild();
    ctx.note(fmt::format("{}: the loss reads the labelled rows of {} ({} x {} projection)", sce.name,
                         projection.name, p.hidden_size, p.vocab));
    return Status::Ok();
  }
};

ORT_REGISTER_PASS(ComputationReduction);

}  // namespace
}  // namespace ort_train
