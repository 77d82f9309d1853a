// Finite-difference checks of the Reduce* rules: random shapes and axes
// (negative included), keepdims on and off, axes as attribute and as input.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

// A Reduce node over random axes; axes go in the input form at `opset` when the op takes them there.
std::function<NodeSpec(Rng&)> reduce(const char* op, int64_t opset, bool axes_input, double lo = -1, double hi = 1,
                                     bool distinct = false) {
  return [=](Rng& r) {
    Dims d = r.shape(1, 4);
    int64_t rank = static_cast<int64_t>(d.size());
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < rank; ++a)
      if (r.integer(0, 1)) axes.push_back(r.integer(0, 1) ? a - rank : a);
    int64_t keep = r.integer(0, 1);
    NodeSpec s{.op = op, .inputs = {distinct ? r.distinct(d, lo, hi) : r.uniform(d, lo, hi)},
               .attributes = {Attribute::make_int("keepdims", keep)}, .opset = opset};
    if (!axes.empty()) {
      if (axes_input) s.inputs.push_back(make<int64_t>({static_cast<int64_t>(axes.size())}, axes));
      else s.attributes.push_back(Attribute::make_ints("axes", axes));
    }
    return s;
  };
}

GRAD_CASE("ReduceSum", {"ReduceSum axes input (opset 13)", reduce("ReduceSum", 13, true)});
GRAD_CASE("ReduceSum", {"ReduceSum axes attribute (opset 11)", reduce("ReduceSum", 11, false)});
GRAD_CASE("ReduceMean", {"ReduceMean (opset 17)", reduce("ReduceMean", 17, false)});
GRAD_CASE("ReduceMean", {"ReduceMean axes input (opset 18)", reduce("ReduceMean", 18, true)});
GRAD_CASE("ReduceSumSquare", {"ReduceSumSquare", reduce("ReduceSumSquare", 17, false)});
GRAD_CASE("ReduceL1", {"ReduceL1 away from 0", [](Rng& r) {
  NodeSpec s = reduce("ReduceL1", 17, false)(r);
  s.inputs[0] = r.away_from(s.inputs[0].dims(), 0, 0.05);
  return s;
}});
GRAD_CASE("ReduceL2", {"ReduceL2", reduce("ReduceL2", 17, false, 0.2, 1.0)});
GRAD_CASE("ReduceLogSumExp", {"ReduceLogSumExp", reduce("ReduceLogSumExp", 17, false, -2, 2)});
GRAD_CASE("ReduceLogSum", {"ReduceLogSum", reduce("ReduceLogSum", 17, false, 0.5, 2)});
GRAD_CASE("ReduceLogSum", {"ReduceLogSum axes input (opset 18)", reduce("ReduceLogSum", 18, true, 0.5, 2)});
GRAD_CASE("ReduceProd", {"ReduceProd", reduce("ReduceProd", 17, false, 0.5, 1.5)});
GRAD_CASE("ReduceMax", {"ReduceMax distinct values", reduce("ReduceMax", 17, false, -1, 1, true)});
GRAD_CASE("ReduceMax", {"ReduceMax axes input (opset 18)", reduce("ReduceMax", 18, true, -1, 1, true)});
GRAD_CASE("ReduceMin", {"ReduceMin distinct values", reduce("ReduceMin", 13, false, -1, 1, true)});

}  // namespace

TEST_CASE("gradcheck.reduce") {
  check_registered({"ReduceSum", "ReduceMean", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp", "ReduceLogSum",
                    "ReduceProd", "ReduceMax", "ReduceMin"});
}

}  // namespace ort_train::testing
