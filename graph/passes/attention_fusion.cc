// attention_fusion: scaled-dot-product attention as the exporters spell it,
//   MatMul(Dropout(Softmax(Where(mask, fill, scale * Q K^T) + bias)), V),
// becomes one com.ort_train Attention(Q, K, V, bias, mask). Every part but
// the product and the Softmax is optional, and the parts come as earlier
// fusions left them: the scale in a FusedMatMul's alpha (or a Div/Mul by a
// constant), K^T in its transB or a Transpose (perm 0,2,3,1) that the op
// reads as k_transposed, the bias inside a BiasSoftmax. Seen in the exports:
// BERT and ViT (padding mask or none), GPT-2 (causal Where, then the padding
// mask), Llama (one additive causal+padding mask; K and V repeated for
// grouped-query heads), DistilBERT (Where on the padding mask, Q pre-scaled),
// T5 (a trainable position bias, no scale).
//
// The CPU kernel is flash-attention style (runtime/cpu/kernels/attention.cc):
// the [B, H, T, S] scores, probabilities and dropout mask are never stored,
// where the unfused graph keeps probabilities and mask of every layer for the
// backward. The arithmetic is the same but summed in another order (online
// softmax over key blocks, the backward's recomputed probabilities), so the
// results differ from the unfused graph's by rounding, within the 1e-5 the
// passes are held to. A Dropout inside is drawn by the op's own counter hash
// seeded from the node's seed attribute: the same distribution as the
// Dropout's, not the same mask.
//
// Grouped-query attention: Llama repeats each key/value head with
// Unsqueeze(axis 2), Expand and Reshape; when shape inference proves that
// pattern, the op reads the unrepeated K and V (head h uses h / (H / Hk)).
#include <fmt/format.h>

#include "graph/op_schema.h"
#include "graph/passes/pattern_match.h"
#include "graph/stable_hash.h"

namespace ort_train {
namespace {

struct Scores {
  std::string q, k, mask;
  bool k_transposed = false;
  double scale = 1.0;
  double fill = 0.0;
  bool fill_when = false;
  std::set<size_t> nodes;
};

bool is_float(std::optional<DType> t) { return t && (*t == DType::kFloat || *t == DType::kDouble); }

class AttentionFusion : public FusionPass {
 public:
  std::string name() const override { return "attention_fusion"; }

  std::optional<FusedMatch> match(const Node& out, PatternMatcher& pm) override {
    if (out.op_type != "MatMul" || !out.domain.empty() || out.inputs.size() != 2) return std::nullopt;
    if (pm.rank(out.outputs[0]) != 4u || pm.rank(out.inputs[1]) != 4u || !is_float(pm.dtype(out.outputs[0])))
      return std::nullopt;
    std::set<size_t> nodes = {pm.position(&out)};
    std::vector<Attribute> attrs;
    std::string probs = out.inputs[0];
    if (const Node* dropout = pm.producer(probs, "Dropout", 1)) {
      if (!dropout_attributes(*dropout, pm, attrs)) return std::nullopt;
      nodes.insert(pm.position(dropout));
      probs = dropout->inputs[0];
    }
    // The softmax over the last axis, with the bias an Add or a BiasSoftmax put on the scores.
    std::vector<std::string> operands;
    if (const Node* sm = pm.producer(probs, "Softmax", 1)) {
      int64_t axis = sm->attr_int("axis", pm.opset() >= 13 ? -1 : 1);
      if (axis != -1 && axis != 3) return std::nullopt;
      nodes.insert(pm.position(sm));
      if (const Node* add = pm.producer(sm->inputs[0], "Add", 2)) {
        nodes.insert(pm.position(add));
        operands = add->inputs;
      } else {
        operands = {sm->inputs[0]};
      }
    } else if (const Node* bsm = pm.fused_producer(probs, "BiasSoftmax", 2)) {
      nodes.insert(pm.position(bsm));
      operands = bsm->inputs;
    } else {
      return std::nullopt;
    }
    // Which operand is the scores: the one that is an attention product (try both of a sum).
    std::optional<Scores> scores;
    std::string bias;
    for (size_t i = 0; i < operands.size() && !scores; ++i) {
      scores = scores_of(operands[i], pm);
      if (scores && operands.size() == 2) bias = operands[1 - i];
    }
    if (!scores) return std::nullopt;
    if (!bias.empty() && (pm.dtype(bias) != pm.dtype(out.outputs[0]) || !pm.rank(bias) || *pm.rank(bias) > 4))
      return std::nullopt;
    nodes.insert(scores->nodes.begin(), scores->nodes.end());
    std::string v = out.inputs[1];
    bool grouped = ungroup(scores->k, v, scores->k_transposed, nodes, pm);
    if (!pm.closed(nodes, pm.position(&out))) return std::nullopt;
    attrs.push_back(Attribute::make_float("scale", static_cast<float>(scores->scale)));
    if (scores->k_transposed) attrs.push_back(Attribute::make_int("k_transposed", 1));
    if (!scores->mask.empty()) {
      attrs.push_back(Attribute::make_float("mask_fill", static_cast<float>(scores->fill)));
      attrs.push_back(Attribute::make_int("mask_fill_when", scores->fill_when));
    }
    std::vector<std::string> inputs = {scores->q, scores->k, v};
    if (!bias.empty() || !scores->mask.empty()) inputs.push_back(bias);
    if (!scores->mask.empty()) inputs.push_back(scores->mask);
    Node fused = fused_node(pm.index(), out, "Attention", std::move(inputs), std::move(attrs));
    pm.context().note(fmt::format("{}: {} nodes -> 1 ({}{}{}{}{})", fused.name, nodes.size(),
                                  scores->k_transposed ? "K^T" : "K", bias.empty() ? "" : ", bias",
                                  scores->mask.empty() ? "" : ", mask", fused.attr("dropout_ratio") ? ", dropout" : "",
                                  grouped ? ", grouped K/V" : ""));
    return FusedMatch{pm.position(&out), std::move(nodes), std::move(fused)};
  }

 private:
  // A Dropout's ratio and training mode as the op's attributes, when both are
  // known before the run (constants, or the run's mode before opset 12).
  static bool dropout_attributes(const Node& d, const PatternMatcher& pm, std::vector<Attribute>& attrs) {
    if (d.outputs.size() > 1 && !d.outputs[1].empty() && pm.index().is_used(d.outputs[1])) return false;
    double ratio = 0.5;
    if (pm.opset() >= 12) {
      if (d.has_input(1)) {
        auto r = pm.scalar(d.inputs[1]);
        if (!r) return false;
        ratio = *r;
      }
      bool training = false;
      if (d.has_input(2)) {
        auto t = pm.bool_scalar(d.inputs[2]);
        if (!t) return false;
        training = *t;
      }
      if (!training) ratio = 0.0;
    } else {
      ratio = d.attr_float("ratio", 0.5f);
      attrs.push_back(Attribute::make_int("runtime_training", 1));
    }
    if (ratio < 0.0 || ratio >= 1.0) return false;
    if (ratio > 0.0) {
      attrs.push_back(Attribute::make_float("dropout_ratio", static_cast<float>(ratio)));
      // A seed of the node's own (kept from the Dropout, else from its name),
      // so that the forward, its gradient and recompute's copy draw one mask.
      // The name's hash is the same in every build, so a run repeats across versions.
      int64_t seed = d.attr_int("seed", static_cast<int64_t>(fnv1a64(d.name.data(), d.name.size()) & 0x7fffffff));
      attrs.push_back(Attribute::make_int("seed", seed));
    }
    return true;
  }

  // scale * Q K^T, optionally filled by Where(mask, ...) with a constant.
  static std::optional<Scores> scores_of(const std::string& value, const PatternMatcher& pm) {
    Scores s;
    std::string product = value;
    if (const Node* where = pm.producer(value, "Where", 3)) {
      if (pm.dtype(where->inputs[0]) != DType::kBool || !pm.rank(where->inputs[0]) || *pm.rank(where->inputs[0]) > 4)
        return std::nullopt;
      if (auto fill = pm.scalar(where->inputs[2])) {
        s.fill = *fill;
        s.fill_when = false;
        product = where->inputs[1];
      } else if (auto fill1 = pm.scalar(where->inputs[1])) {
        s.fill = *fill1;
        s.fill_when = true;
        product = where->inputs[2];
      } else {
        return std::nullopt;
      }
      s.mask = where->inputs[0];
      s.nodes.insert(pm.position(where));
    }
    // A constant divisor or factor that matmul_scale_fusion left (it was disabled).
    for (const char* op : {"Div", "Mul"}) {
      const Node* n = pm.producer(product, op, 2);
      if (!n) continue;
      auto c = pm.scalar(n->inputs[1]);
      if (!c || *c == 0.0) continue;
      s.scale = std::string(op) == "Div" ? 1.0 / *c : *c;
      s.nodes.insert(pm.position(n));
      product = n->inputs[0];
      break;
    }
    const Node* mm = pm.producer(product, "MatMul", 2);
    const Node* fm = mm ? nullptr : pm.fused_producer(product, "FusedMatMul", 2);
    if (fm) {
      if (fm->inputs.size() != 2 || fm->attr_int("transA", 0) != 0 || fm->attr_int("transBatchA", 0) != 0 ||
          fm->attr_int("transBatchB", 0) != 0)
        return std::nullopt;
      s.scale *= fm->attr_float("alpha", 1.0f);
      s.k_transposed = fm->attr_int("transB", 0) == 0;
      mm = fm;
    } else if (mm) {
      s.k_transposed = true;
    } else {
      return std::nullopt;
    }
    s.q = mm->inputs[0];
    s.k = mm->inputs[1];
    if (pm.rank(s.q) != 4u || pm.rank(s.k) != 4u || !is_float(pm.dtype(s.q)) || pm.dtype(s.k) != pm.dtype(s.q))
      return std::nullopt;
    s.nodes.insert(pm.position(mm));
    return s;
  }

  // Llama's repeat_kv: Reshape(Expand(Unsqueeze(x, axis 2)), [B, Hk * n, S, D]),
  // when shape inference proves it: returns x and the nodes, else nothing.
  static std::optional<std::pair<std::string, std::set<size_t>>> repeated(const std::string& value,
                                                                           const PatternMatcher& pm) {
    const Node* reshape = pm.producer(value, "Reshape", 2);
    const Node* expand = reshape ? pm.producer(reshape->inputs[0], "Expand", 2) : nullptr;
    const Node* unsq = expand ? pm.producer(expand->inputs[0], "Unsqueeze", 1) : nullptr;
    if (!unsq) return std::nullopt;
    OptShape x = pm.shape(unsq->inputs[0]), e = pm.shape(expand->outputs[0]), r = pm.shape(value);
    if (!x || !e || !r || x->size() != 4 || e->size() != 5 || r->size() != 4) return std::nullopt;
    const Shape &xs = *x, &es = *e, &rs = *r;
    auto same = [](const Dim& a, const Dim& b) { return a.known() ? a.value == b.value : !a.symbol.empty() && a == b; };
    if (!same(es[0], xs[0]) || !same(es[1], xs[1]) || !same(es[3], xs[2]) || !same(es[4], xs[3])) return std::nullopt;
    if (!es[2].known() || !xs[1].known() || !rs[1].known() || rs[1].value != xs[1].value * es[2].value ||
        !same(rs[0], xs[0]) || !same(rs[2], xs[2]) || !same(rs[3], xs[3]))
      return std::nullopt;
    return std::make_pair(unsq->inputs[0], std::set<size_t>{pm.position(reshape), pm.position(expand),
                                                             pm.position(unsq)});
  }

  // Reads K and V unrepeated when both are repeat_kv's output (K as [B, H, S, D]); true when it does.
  static bool ungroup(std::string& k, std::string& v, bool k_transposed, std::set<size_t>& nodes,
                      const PatternMatcher& pm) {
    if (k_transposed) return false;
    auto rk = repeated(k, pm), rv = repeated(v, pm);
    if (!rk || !rv) return false;
    std::set<size_t> with = nodes;
    with.insert(rk->second.begin(), rk->second.end());
    with.insert(rv->second.begin(), rv->second.end());
    // Only when nothing else reads the repeated tensors (closed() checks the rest).
    if (!pm.only_read_by(k, nodes) || !pm.only_read_by(v, nodes)) return false;
    k = rk->first;
    v = rv->first;
    nodes = std::move(with);
    return true;
  }
};

ORT_REGISTER_PASS(AttentionFusion);

}  // namespace
}  // namespace ort_train
