// Gradient rules of Concat (split dY back into the inputs' extents) and Split
// (concatenate the outputs' gradients, zeros for unused outputs).
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

// Sizes of the inputs along `axis` as a 1-D int64 value: a constant when every
// extent is known, else read from the inputs' shapes at run time.
Result<std::string> extents(GradientContext& c, int64_t axis) {
  GraphBuilder& b = c.builder();
  std::vector<int64_t> known;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const OptShape& s = c.shape(c.I(i));
    if (!s || !(*s)[static_cast<size_t>(axis)].known()) break;
    known.push_back((*s)[static_cast<size_t>(axis)].value);
  }
  if (known.size() == c.num_inputs()) return b.ints(known);
  std::vector<std::string> parts;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    ASSIGN_OR_RETURN(auto s, b.shape_of(c.I(i)));
    ASSIGN_OR_RETURN(auto e, c.add1("Slice", {s, b.ints({axis}), b.ints({axis + 1})}));
    parts.push_back(e);
  }
  return c.add1("Concat", parts, {Attribute::make_int("axis", 0)});
}

Status concat_rule(GradientContext& c) {
  int64_t r = c.rank(c.O(0));
  if (r < 0) return c.unsupported_case("output rank must be known");
  int64_t axis = c.node().attr_int("axis", 0);
  if (axis < 0) axis += r;
  std::vector<Attribute> attrs{Attribute::make_int("axis", axis)};
  std::vector<std::string> split_inputs{c.GO(0)};
  if (c.opset() >= 13) {
    ASSIGN_OR_RETURN(auto sizes, extents(c, axis));
    split_inputs.push_back(sizes);
  } else {
    std::vector<int64_t> sizes;
    for (size_t i = 0; i < c.num_inputs(); ++i) {
      const OptShape& s = c.shape(c.I(i));
      if (!s || !(*s)[static_cast<size_t>(axis)].known())
        return c.unsupported_case("before opset 13 the inputs' extents along the axis must be known");
      sizes.push_back((*s)[static_cast<size_t>(axis)].value);
    }
    attrs.push_back(Attribute::make_ints("split", sizes));
  }
  ASSIGN_OR_RETURN(auto parts, c.add("Split", split_inputs, c.num_inputs(), attrs));
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (c.needs_GI(i)) c.set_GI(i, parts[i]);
  return Status::Ok();
}

Status split_rule(GradientContext& c) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < c.num_outputs(); ++i) {
    ASSIGN_OR_RETURN(auto g, c.GO_or_zeros(i));
    parts.push_back(g);
  }
  ASSIGN_OR_RETURN(auto g, c.add1("Concat", parts, {Attribute::make_int("axis", c.node().attr_int("axis", 0))}));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Concat").rule(concat_rule);
ORT_GRADIENT("Split").no_gradient_for({1}).rule(split_rule);

}  // namespace ort_train
