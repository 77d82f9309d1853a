// Gradient rules of OneHot, EyeLike, Hardmax, ReverseSequence and Compress.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

std::string int64s(GradientContext& c, std::vector<int64_t> v) {
  Tensor t = Tensor::host(DType::kInt64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return c.builder().constant(t, "int64s");
}

// OneHot(indices, depth, values [off, on]): d on = sum(dY where hot),
// d off = sum(dY) - d on, as the [2] gradient of values.
Status one_hot_rule(GradientContext& c) {
  const DType t = c.dtype(c.I(2));
  Tensor unit = Tensor::host(t, {2});
  if (t == DType::kDouble) unit.data<double>()[0] = 0, unit.data<double>()[1] = 1;
  else unit.data<float>()[0] = 0, unit.data<float>()[1] = 1;
  ASSIGN_OR_RETURN(auto mask, c.add1("OneHot", {c.I(0), c.I(1), c.builder().constant(unit, "one_hot_unit")},
                                     c.node().attributes));
  ASSIGN_OR_RETURN(auto hot, c.add1("Mul", {c.GO(0), mask}));
  ASSIGN_OR_RETURN(auto flat_hot, c.add1("Reshape", {hot, int64s(c, {-1})}));
  ASSIGN_OR_RETURN(auto flat_all, c.add1("Reshape", {c.GO(0), int64s(c, {-1})}));
  // (No axes: all of them, at any opset; keepdims leaves the 1-D sums [1].)
  ASSIGN_OR_RETURN(auto d_on, c.add1("ReduceSum", {flat_hot}, {Attribute::make_int("keepdims", 1)}));
  ASSIGN_OR_RETURN(auto all, c.add1("ReduceSum", {flat_all}, {Attribute::make_int("keepdims", 1)}));
  ASSIGN_OR_RETURN(auto d_off, c.add1("Sub", {all, d_on}));
  ASSIGN_OR_RETURN(auto g, c.add1("Concat", {d_off, d_on}, {Attribute::make_int("axis", 0)}));
  c.set_GI(2, g);
  return Status::Ok();
}

// ReverseSequence reverses the same positions of dY.
Status reverse_sequence_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto g, c.add1("ReverseSequence", {c.GO(0), c.I(1)}, c.node().attributes));
  c.set_GI(0, g);
  return Status::Ok();
}

// Compress is a Gather of the condition's true positions (NonZero): its
// gradient adds dY's slices back there (com.ort_train GatherGrad), on the
// flattened input when there is no axis.
Status compress_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto nz, c.add1("NonZero", {c.I(1)}));
  ASSIGN_OR_RETURN(auto idx, c.add1("Reshape", {nz, int64s(c, {-1})}));
  ASSIGN_OR_RETURN(auto shape, c.add1("Shape", {c.I(0)}));
  if (const Attribute* axis = c.node().attr("axis")) {
    ASSIGN_OR_RETURN(auto g, c.add1("GatherGrad", {c.GO(0), shape, idx}, {Attribute::make_int("axis", axis->i)},
                                    kOrtTrainDomain));
    c.set_GI(0, g);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(auto size, c.add1("Size", {c.I(0)}));
  ASSIGN_OR_RETURN(auto flat_shape, c.add1("Reshape", {size, int64s(c, {1})}));
  ASSIGN_OR_RETURN(auto flat, c.add1("GatherGrad", {c.GO(0), flat_shape, idx}, {Attribute::make_int("axis", 0)},
                                     kOrtTrainDomain));
  ASSIGN_OR_RETURN(auto g, c.add1("Reshape", {flat, shape}));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("OneHot").no_gradient_for({0, 1}).rule(one_hot_rule);
ORT_GRADIENT("EyeLike").not_differentiable();  // reads only the input's shape
ORT_GRADIENT("Hardmax").zero();                // piecewise constant
ORT_GRADIENT("ReverseSequence").no_gradient_for({1}).rule(reverse_sequence_rule);
ORT_GRADIENT("Compress").no_gradient_for({1}).rule(compress_rule);

}  // namespace ort_train
