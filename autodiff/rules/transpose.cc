// Gradient rule of Transpose: the inverse permutation.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

Status transpose_rule(GradientContext& c) {
  std::vector<int64_t> perm = c.node().attr_ints("perm");
  if (perm.empty()) {  // default: reverse the dims
    int64_t r = c.rank(c.I(0));
    if (r < 0) return c.unsupported_case("input rank must be known");
    for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  ASSIGN_OR_RETURN(auto g, c.add1("Transpose", {c.GO(0)}, {Attribute::make_ints("perm", inverse)}));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Transpose").rule(transpose_rule);

}  // namespace ort_train
