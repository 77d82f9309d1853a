#include "graph/dim_values.h"

#include <algorithm>
#include <limits>

namespace ort_train {
namespace {

const Tensor* constant(const DimValueInputs& in, const Node& n, size_t i) {
  if (!n.has_input(i)) return nullptr;
  auto it = in.constants.find(n.inputs[i]);
  return it == in.constants.end() ? nullptr : &it->second;
}

std::optional<std::vector<int64_t>> int_constant(const DimValueInputs& in, const Node& n, size_t i) {
  const Tensor* t = constant(in, n, i);
  if (!t || (t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32)) return std::nullopt;
  return t->to_int64_vector();
}

std::optional<DimValues> input(const DimValueInputs& in, const Node& n, size_t i) {
  if (!n.has_input(i)) return std::nullopt;
  if (const Tensor* t = constant(in, n, i)) return dim_values_of_constant(*t);
  auto it = in.dim_values.find(n.inputs[i]);
  if (it == in.dim_values.end()) return std::nullopt;
  return it->second;
}

std::optional<DimValues> shape_of(const Node& n, int64_t opset, const DimValueInputs& in) {
  const ValueInfo* v = in.graph.value(n.inputs[0]);
  if (!v || !v->shape) return std::nullopt;
  const Shape& s = *v->shape;
  int64_t rank = static_cast<int64_t>(s.size());
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = opset >= 15 ? clamp(n.attr_int("start", 0)) : 0;
  int64_t end = opset >= 15 && n.attr("end") ? clamp(n.attr_int("end", rank)) : rank;
  DimValues out;
  for (int64_t i = start; i < end; ++i) out.elements.push_back(s[static_cast<size_t>(i)]);
  return out;
}

std::optional<DimValues> gather(const Node& n, const DimValueInputs& in) {
  auto data = input(in, n, 0);
  auto idx = int_constant(in, n, 1);
  const Tensor* it = constant(in, n, 1);
  if (!data || data->scalar || !idx || it->rank() > 1 || n.attr_int("axis", 0) != 0) return std::nullopt;
  DimValues out;  // a -1 picked out is just an unknown size here
  out.scalar = it->rank() == 0;
  auto size = static_cast<int64_t>(data->elements.size());
  for (int64_t i : *idx) {
    if (i < 0) i += size;
    if (i < 0 || i >= size) return std::nullopt;
    out.elements.push_back(data->elements[static_cast<size_t>(i)]);
  }
  return out;
}

std::optional<DimValues> slice(const Node& n, int64_t opset, const DimValueInputs& in) {
  auto data = input(in, n, 0);
  if (!data || data->scalar || opset < 10) return std::nullopt;
  auto starts = int_constant(in, n, 1), ends = int_constant(in, n, 2);
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
  if (n.has_input(3)) {
    auto axes = int_constant(in, n, 3);
    if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)) return std::nullopt;
  }
  if (n.has_input(4)) {
    auto steps = int_constant(in, n, 4);
    if (!steps || steps->size() != 1 || (*steps)[0] != 1) return std::nullopt;
  }
  auto size = static_cast<int64_t>(data->elements.size());
  auto clamp = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + size : v, 0, size); };
  int64_t b = clamp((*starts)[0]), e = clamp((*ends)[0]);
  DimValues out;
  for (int64_t i = b; i < e; ++i) out.elements.push_back(data->elements[static_cast<size_t>(i)]);
  return out;
}

std::optional<DimValues> concat(const Node& n, const DimValueInputs& in) {
  if (n.attr_int("axis", 0) != 0 && n.attr_int("axis", 0) != -1) return std::nullopt;
  DimValues out;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    auto part = input(in, n, i);
    if (!part || part->scalar) return std::nullopt;
    if (part->minus_one) {
      if (out.minus_one) return std::nullopt;  // two: no Reshape target
      out.minus_one = out.elements.size() + *part->minus_one;
    }
    out.elements.insert(out.elements.end(), part->elements.begin(), part->elements.end());
  }
  return out;
}

}  // namespace

std::optional<DimValues> dim_values_of_constant(const Tensor& t) {
  if ((t.dtype() != DType::kInt64 && t.dtype() != DType::kInt32) || t.rank() > 1 || t.numel() > 64)
    return std::nullopt;
  DimValues out;
  out.scalar = t.rank() == 0;
  for (int64_t v : t.to_int64_vector()) {
    if (v == -1 && !out.minus_one) out.minus_one = out.elements.size();
    out.elements.push_back(v >= 0 ? Dim(v) : Dim());
  }
  return out;
}

std::optional<DimValues> propagate_dim_values(const Node& n, int64_t opset, const DimValueInputs& in) {
  if (!n.domain.empty() || n.outputs.empty() || n.inputs.empty()) return std::nullopt;
  const std::string& op = n.op_type;
  if (op == "Shape") return shape_of(n, opset, in);
  if (op == "Gather") return gather(n, in);
  if (op == "Slice") return slice(n, opset, in);
  if (op == "Concat") return concat(n, in);
  if (op == "Identity" || (op == "Cast" && (n.attr_int("to", 0) == 7 || n.attr_int("to", 0) == 6)))
    return input(in, n, 0);
  if (op == "Unsqueeze") {  // a scalar size becoming a one-element list
    auto x = input(in, n, 0);
    if (!x || !x->scalar) return std::nullopt;
    x->scalar = false;
    return x;
  }
  if (op == "Squeeze") {  // a one-element list becoming a scalar
    auto x = input(in, n, 0);
    if (!x || x->scalar || x->elements.size() != 1) return std::nullopt;
    x->scalar = true;
    return x;
  }
  return std::nullopt;
}

}  // namespace ort_train
