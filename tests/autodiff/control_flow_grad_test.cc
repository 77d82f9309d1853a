// Finite-difference checks of If's gradient (autodiff/rules/control_flow.cc):
// each seed takes one branch or the other; the branches read the captures
// differently (one not at all, one passed straight through) so the zeros and
// identity paths of the branch gradients are checked too.
#include "autodiff/gradient_check.h"
#include "graph/control_flow.h"

namespace ort_train::testing {
namespace {

Node op(const std::string& type, std::vector<std::string> in, std::vector<std::string> out) {
  Node n;
  n.name = type + "_" + out[0];
  n.op_type = type;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// A branch over captures (a, b), both double; outputs as listed.
std::shared_ptr<const Graph> branch(const std::string& name, std::vector<Node> nodes, std::vector<std::string> outs) {
  auto g = std::make_shared<Graph>();
  g->name = name;
  for (const char* in : {"a", "b"}) {
    ValueInfo v;
    v.name = in;
    v.dtype = DType::kDouble;
    g->inputs.push_back(v);
    g->values[in] = v;
  }
  g->nodes = std::move(nodes);
  for (const std::string& o : outs) {
    ValueInfo v;
    v.name = o;
    g->outputs.push_back(v);
  }
  return g;
}

Tensor flag(bool v) {
  Tensor t = Tensor::host(DType::kBool, {});
  t.data<bool>()[0] = v;
  return t;
}

NodeSpec if_spec(bool cond, Tensor a, Tensor b, std::shared_ptr<const Graph> then_g,
                 std::shared_ptr<const Graph> else_g, size_t outputs) {
  return NodeSpec{.op = "If",
                  .inputs = {flag(cond), std::move(a), std::move(b)},
                  .attributes = {Attribute::make_graph("then_branch", std::move(then_g)),
                                 Attribute::make_graph("else_branch", std::move(else_g)),
                                 Attribute::make_int("num_captures", 2), Attribute::make_int("onnx_opset", 17)},
                  .num_outputs = outputs,
                  .constant_inputs = {0},
                  .domain = kOrtTrainDomain};
}

GRAD_CASE("If", {"If: a*b or sin(a) (b unread), either branch", [](Rng& r) {
  auto then_g = branch("then", {op("Mul", {"a", "b"}, {"t"})}, {"t"});
  auto else_g = branch("else", {op("Sin", {"a"}, {"e"})}, {"e"});
  Dims d = r.shape(1, 3);
  return if_spec(r.integer(0, 1) == 1, r.uniform(d), r.uniform(d), then_g, else_g, 1);
}, {1, 2}, 1e-5, 1e-6, 1e-6, 6});

GRAD_CASE("If", {"If: two outputs, one a capture passed through, broadcast inside", [](Rng& r) {
  auto then_g = branch("then", {op("Add", {"a", "b"}, {"s"}), op("Tanh", {"s"}, {"t"})}, {"t", "b"});
  auto else_g = branch("else", {op("Mul", {"a", "a"}, {"sq"}), op("Identity", {"a"}, {"i"})}, {"sq", "i"});
  return if_spec(r.integer(0, 1) == 1, r.uniform({2, 3}), r.uniform({2, 3}), then_g, else_g, 2);
}, {1, 2}, 1e-5, 1e-6, 1e-6, 6});

}  // namespace

TEST_CASE("gradcheck.if") { check_registered({"If"}); }

}  // namespace ort_train::testing
