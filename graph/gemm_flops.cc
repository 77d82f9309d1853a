#include "graph/gemm_flops.h"

#include <cstdint>
#include <optional>

#include "graph/op_schema.h"

namespace ort_train {
namespace {

// The known dims of a value, or nothing.
std::optional<Dims> known_dims(const Graph& g, const std::string& name) {
  const ValueInfo* v = g.value(name);
  if (!v || !v->shape || !shape_fully_known(*v->shape)) return std::nullopt;
  return dims_from_shape(*v->shape);
}

// The product of d's dims from `from` on.
double product(const Dims& d, size_t from = 0) {
  double p = 1;
  for (size_t i = from; i < d.size(); ++i) p *= static_cast<double>(d[i]);
  return p;
}

// FLOPs of one node, or a negative number when its shapes are not known; 0
// for a node that is no product.
double node_flops(const Graph& g, const Node& n) {
  bool ours = n.domain == kOrtTrainDomain;
  bool onnx = n.domain.empty();
  if ((onnx && (n.op_type == "MatMul" || n.op_type == "Gemm")) || (ours && n.op_type == "FusedMatMul")) {
    auto a = known_dims(g, n.inputs[0]), y = known_dims(g, n.outputs[0]);
    if (!a || !y) return -1;
    if (a->empty()) return 0;
    // K: A's contracted dim (its second-to-last when transposed, a 1-D A's only one).
    bool ta = n.attr_int("transA", 0) != 0;
    int64_t k = a->size() == 1 ? (*a)[0] : (*a)[a->size() - (ta ? 2 : 1)];
    return 2.0 * product(*y) * static_cast<double>(k);
  }
  if (onnx && n.op_type == "Conv") {
    auto w = known_dims(g, n.inputs[1]), y = known_dims(g, n.outputs[0]);
    if (!w || !y || w->size() < 2) return -1;
    return 2.0 * product(*y) * product(*w, 1);  // per output element: C/group * kernel multiply-adds
  }
  if (ours && n.op_type == "ConvGrad") {
    auto dy = known_dims(g, n.inputs[0]), w = known_dims(g, n.inputs[2]);
    if (!dy || !w || w->size() < 2) return -1;
    return 4.0 * product(*dy) * product(*w, 1);
  }
  if (ours && (n.op_type == "Attention" || n.op_type == "AttentionGrad")) {
    bool grad = n.op_type == "AttentionGrad";
    size_t q0 = grad ? 1 : 0;
    auto q = known_dims(g, n.inputs[q0]), v = known_dims(g, n.inputs[q0 + 2]);
    if (!q || !v || q->size() != 4 || v->size() != 4) return -1;
    double scores = (*q)[0] * (*q)[1] * (*q)[2] * static_cast<double>((*v)[2]);  // B*H*T*S
    return (grad ? 4.0 : 2.0) * scores * static_cast<double>((*q)[3] + (*v)[3]);
  }
  return 0;
}

}  // namespace

double GemmFlops::total() const {
  double t = 0;
  for (const auto& [dtype, f] : by_dtype) t += f;
  return t;
}

double GemmFlops::fraction(DType t) const {
  double all = total();
  auto it = by_dtype.find(t);
  return all > 0 && it != by_dtype.end() ? it->second / all : 0.0;
}

GemmFlops count_gemm_flops(const Graph& g) {
  GemmFlops out;
  for (const Node& n : g.nodes) {
    double f = node_flops(g, n);
    if (f < 0) {
      out.unknown.push_back(n.describe());
      continue;
    }
    if (f == 0) continue;
    const ValueInfo* in = g.value(n.inputs[n.op_type == "AttentionGrad" || n.op_type == "ConvGrad" ? 1 : 0]);
    out.by_dtype[in ? in->dtype : DType::kUndefined] += f;
  }
  return out;
}

}  // namespace ort_train
