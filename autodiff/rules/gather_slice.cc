// Gradient rules of Gather and Slice: the gradient rebuilds a tensor of the
// data's shape (GatherGrad scatter-adds, SliceGrad writes back into zeros).
// A lookup in an embedding table with a padding row (the description's
// embeddings:) adds nothing to that row, as torch.nn.Embedding(padding_idx)'s
// backward: the rows of the incoming gradient whose index is the padding
// row are zeroed before the scatter-add.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

// GO(0) with the lookups of `row` zeroed: GO * Unsqueeze(Cast(Not(is_row))),
// where is_row also holds for the negative index that names the same row.
Result<std::string> without_padding_row(GradientContext& c, int64_t row) {
  const std::string& indices = c.I(1);
  const DType index_type = c.dtype(indices);
  auto index = [&](int64_t v) {
    Tensor t = index_type == DType::kInt32 ? Tensor::from_vector<int32_t>({}, {static_cast<int32_t>(v)})
                                           : Tensor::from_vector<int64_t>({}, {v});
    return c.builder().constant(t, "padding_row");
  };
  ASSIGN_OR_RETURN(auto is_row, c.add1("Equal", {indices, index(row)}));
  const OptShape& table = c.shape(c.I(0));
  if (table && !table->empty() && (*table)[0].known()) {
    ASSIGN_OR_RETURN(auto from_end, c.add1("Equal", {indices, index(row - (*table)[0].value)}));
    ASSIGN_OR_RETURN(is_row, c.add1("Or", {is_row, from_end}));
  }
  ASSIGN_OR_RETURN(auto keep, c.add1("Not", {is_row}));
  ASSIGN_OR_RETURN(auto keep_f, c.add1("Cast", {keep}, {Attribute::make_int("to", static_cast<int64_t>(c.dtype(c.GO(0))))}));
  std::vector<int64_t> row_axes;  // the looked-up row's own axes, after the indices'
  for (int64_t a = 1; a < c.rank(c.I(0)); ++a) row_axes.push_back(-a);
  ASSIGN_OR_RETURN(auto mask, c.builder().unsqueeze(keep_f, row_axes));
  return c.add1("Mul", {c.GO(0), mask});
}

Status gather_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  std::string go = c.GO(0);
  std::optional<int64_t> pad = c.padding_row(c.I(0));
  int64_t axis = c.node().attr_int("axis", 0);
  if (pad && (axis == 0 || axis == -c.rank(c.I(0)))) { ASSIGN_OR_RETURN(go, without_padding_row(c, *pad)); }
  ASSIGN_OR_RETURN(auto g, c.add1("GatherGrad", {go, shape, c.I(1)},
                                  {Attribute::make_int("axis", c.node().attr_int("axis", 0))}, kOrtTrainDomain));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
}

Status slice_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(0)));
  std::vector<std::string> in{c.GO(0), shape};
  std::vector<Attribute> attrs;
  if (c.opset() < 10) {
    for (const char* k : {"starts", "ends", "axes"})
      if (const Attribute* a = c.node().attr(k)) attrs.push_back(*a);
  } else {
    for (size_t i = 1; i < c.num_inputs(); ++i) in.push_back(c.I(i));
  }
  ASSIGN_OR_RETURN(auto g, c.add1("SliceGrad", in, attrs, kOrtTrainDomain));
  c.builder().refine_shape(g, c.shape(c.I(0)));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Gather").no_gradient_for({1}).rule(gather_rule);
ORT_GRADIENT("Slice").no_gradient_for({1, 2, 3, 4}).rule(slice_rule);

}  // namespace ort_train
