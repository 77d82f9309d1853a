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

// Reshape of a list of sizes to one dim ([-1] or its own length): the same list.
std::optional<DimValues> reshape_list(const Node& n, const DimValueInputs& in) {
  auto data = input(in, n, 0);
  auto target = int_constant(in, n, 1);
  if (!data || data->scalar || !target || target->size() != 1) return std::nullopt;
  if ((*target)[0] != -1 && (*target)[0] != static_cast<int64_t>(data->elements.size())) return std::nullopt;
  return data;
}

// One element of a partial value as Equal/Where see it: an exact number (a
// Reshape's -1 included), a named size (never negative), or unknown.
struct Element {
  std::optional<int64_t> exact;
  std::string symbol;
};

// The elements of input i, and whether it is a scalar: a constant's raw
// numbers (every -1 exact, which DimValues keeps only for the first), else
// its partial value.
struct Elements {
  std::vector<Element> items;
  bool scalar = false;
  size_t size() const { return items.size(); }
  const Element& operator[](size_t k) const { return items[k]; }
};

std::optional<Elements> elements(const DimValueInputs& in, const Node& n, size_t i) {
  Elements out;
  if (const Tensor* t = constant(in, n, i)) {
    if (t->rank() > 1 || t->numel() > 64) return std::nullopt;
    out.scalar = t->rank() == 0;
    if (t->dtype() == DType::kBool) {
      for (size_t k = 0; k < static_cast<size_t>(t->numel()); ++k)
        out.items.push_back({t->data<uint8_t>()[k] != 0 ? 1 : 0, {}});
      return out;
    }
    if (t->dtype() != DType::kInt64 && t->dtype() != DType::kInt32) return std::nullopt;
    for (int64_t v : t->to_int64_vector()) out.items.push_back({v, {}});
    return out;
  }
  auto dv = input(in, n, i);
  if (!dv) return std::nullopt;
  out.scalar = dv->scalar;
  for (size_t k = 0; k < dv->elements.size(); ++k) {
    const Dim& d = dv->elements[k];
    if (dv->minus_one == k) out.items.push_back({-1, {}});
    else if (d.known()) out.items.push_back({d.value, {}});
    else out.items.push_back({std::nullopt, d.symbol});
  }
  return out;
}

// Elementwise over two lists of equal length or one of length one.
template <typename F>
std::optional<DimValues> elementwise(const Elements& a, const Elements& b, F f) {
  if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return std::nullopt;
  DimValues out;
  size_t size = std::max(a.size(), b.size());
  for (size_t k = 0; k < size; ++k) {
    auto r = f(a[a.size() == 1 ? 0 : k], b[b.size() == 1 ? 0 : k]);
    if (!r) return std::nullopt;
    out.elements.push_back(*r);
  }
  return out;
}

// Sizes multiplied or added (Llama's num_key_value_heads * n_rep): exact
// numbers, or a size times 1 / plus 0.
template <bool kMul>
std::optional<DimValues> arithmetic(const Node& n, const DimValueInputs& in) {
  auto a = elements(in, n, 0), b = elements(in, n, 1);
  if (!a || !b) return std::nullopt;
  const int64_t unit = kMul ? 1 : 0;
  auto out = elementwise(*a, *b, [&](const Element& x, const Element& y) -> std::optional<Dim> {
    if (x.exact && y.exact) {
      int64_t r = 0;
      bool overflow = kMul ? __builtin_mul_overflow(*x.exact, *y.exact, &r) : __builtin_add_overflow(*x.exact, *y.exact, &r);
      if (*x.exact < 0 || *y.exact < 0 || overflow) return std::nullopt;  // only sizes; a -1 or an overflow is not one
      return Dim(r);
    }
    if (!x.symbol.empty() && y.exact == unit) return Dim(x.symbol);
    if (!y.symbol.empty() && x.exact == unit) return Dim(y.symbol);
    return std::nullopt;
  });
  if (out) out->scalar = a->scalar && b->scalar;
  return out;
}

// torch.onnx's expand writes its target as Where(Equal(t, -1), 1, t): known
// element by element when each size is known to be, or not to be, -1.
std::optional<DimValues> equal(const Node& n, const DimValueInputs& in) {
  auto a = elements(in, n, 0), b = elements(in, n, 1);
  if (!a || !b) return std::nullopt;
  auto out = elementwise(*a, *b, [](const Element& x, const Element& y) -> std::optional<Dim> {
    if (x.exact && y.exact) return Dim(*x.exact == *y.exact ? 1 : 0);
    if (!x.symbol.empty() && x.symbol == y.symbol) return Dim(1);
    if ((!x.symbol.empty() && y.exact && *y.exact < 0) || (!y.symbol.empty() && x.exact && *x.exact < 0)) return Dim(0);
    return std::nullopt;
  });
  if (out) out->scalar = a->scalar && b->scalar;
  return out;
}


std::optional<DimValues> where(const Node& n, const DimValueInputs& in) {
  auto c = elements(in, n, 0);
  auto a = input(in, n, 1), b = input(in, n, 2);
  if (!c || !a || !b || a->scalar != b->scalar) return std::nullopt;
  size_t size = std::max({c->size(), a->elements.size(), b->elements.size()});
  DimValues out;
  out.scalar = a->scalar && c->scalar;
  for (size_t k = 0; k < size; ++k) {
    const Element& e = (*c)[c->size() == 1 ? 0 : k];
    if (!e.exact) return std::nullopt;
    const DimValues& from = *e.exact ? *a : *b;
    if (from.elements.size() != 1 && from.elements.size() != size) return std::nullopt;
    size_t at = from.elements.size() == 1 ? 0 : k;
    if (from.minus_one == at) {
      if (out.minus_one) return std::nullopt;
      out.minus_one = k;
    }
    out.elements.push_back(from.elements[at]);
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
  if (op == "Reshape") return reshape_list(n, in);
  if (op == "Equal") return equal(n, in);
  if (op == "Mul") return arithmetic<true>(n, in);
  if (op == "Add") return arithmetic<false>(n, in);
  if (op == "Where") return where(n, in);
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
