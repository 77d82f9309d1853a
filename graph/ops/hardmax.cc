// Shape rule of Hardmax: the input's shape and dtype (1 at the first maximum
// along `axis`, -1 from opset 13; before 13 the input is seen as 2-D around
// axis, 1 by default, as Softmax was).
#include "graph/ops/hardmax.h"

#include <algorithm>

#include "graph/op_schema.h"

namespace ort_train {

Result<std::array<int64_t, 3>> hardmax_view(const Node& node, int64_t opset, const Dims& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const bool coerce_2d = opset < 13;
  ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node.attr_int("axis", coerce_2d ? 1 : -1), std::max<int64_t>(rank, 1),
                                                node));
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t v = dims[static_cast<size_t>(d)];
    if (d < axis) outer *= v;
    else if (d == axis || coerce_2d) n *= v;
    else inner *= v;
  }
  return std::array<int64_t, 3>{outer, n, inner};
}

ORT_REGISTER_OP("", "Hardmax", 1, 1000, same_as_input0, kPlainOp);

}  // namespace ort_train
