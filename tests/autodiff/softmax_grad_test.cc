// Finite-difference checks of Softmax and LogSoftmax, both axis semantics.
#include "autodiff/gradient_check.h"

namespace ort_train::testing {
namespace {

std::function<NodeSpec(Rng&)> softmax(const char* op, int64_t opset) {
  return [=](Rng& r) {
    Dims d = r.shape(1, 4);
    return NodeSpec{.op = op, .inputs = {r.uniform(d, -2, 2)},
                    .attributes = {Attribute::make_int("axis", r.axis(static_cast<int64_t>(d.size())))},
                    .opset = opset};
  };
}

GRAD_CASE("Softmax", {"Softmax random axis (opset 13)", softmax("Softmax", 13)});
GRAD_CASE("Softmax", {"Softmax coerced to 2-D (opset 11)", softmax("Softmax", 11)});
GRAD_CASE("LogSoftmax", {"LogSoftmax random axis (opset 13)", softmax("LogSoftmax", 13)});
GRAD_CASE("LogSoftmax", {"LogSoftmax coerced to 2-D (opset 11)", softmax("LogSoftmax", 11)});

// bias_softmax_fusion's op: attention scores [2, 3, 4, 5] with a mask broadcast over heads and queries,
// a full-shape bias, and operands that both broadcast.
GRAD_CASE("BiasSoftmax", {"BiasSoftmax with an attention-mask bias (com.ort_train)", [](Rng& r) {
  NodeSpec s{.op = "BiasSoftmax", .inputs = {r.uniform({2, 3, 4, 5}, -2, 2), r.uniform({2, 1, 1, 5}, -2, 2)}};
  s.domain = kOrtTrainDomain;
  return s;
}});
GRAD_CASE("BiasSoftmax", {"BiasSoftmax with a full-shape bias (com.ort_train)", [](Rng& r) {
  Dims d = r.shape(1, 3);
  NodeSpec s{.op = "BiasSoftmax", .inputs = {r.uniform(d, -2, 2), r.uniform(d, -2, 2)}};
  s.domain = kOrtTrainDomain;
  return s;
}});

GRAD_CASE("BiasSoftmax", {"BiasSoftmax, both operands broadcast (com.ort_train)", [](Rng& r) {
  NodeSpec s{.op = "BiasSoftmax", .inputs = {r.uniform({2, 1, 4}, -2, 2), r.uniform({3, 1}, -2, 2)}};
  s.domain = kOrtTrainDomain;
  return s;
}});

}  // namespace

TEST_CASE("gradcheck.softmax") { check_registered({"Softmax", "LogSoftmax", "BiasSoftmax"}); }

}  // namespace ort_train::testing
