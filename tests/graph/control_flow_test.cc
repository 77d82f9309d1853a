// If, Loop and Scan: captures of outer values made explicit at load and
// implicit again at save, and forward runs against values worked out by hand
// (graph/control_flow.h, runtime/cpu/kernels/control_flow.cc).
#include <fstream>

#include <onnx/onnx_pb.h>

#include "graph/control_flow.h"
#include "graph/onnx_io.h"
#include "graph/passes/pass.h"
#include "graph/shape_inference.h"
#include "runtime/executor.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

constexpr int F = onnx::TensorProto::FLOAT, I64 = onnx::TensorProto::INT64, B = onnx::TensorProto::BOOL;

void value(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const std::string& name, int type,
           std::vector<int64_t> dims = {}, bool ranked = true) {
  auto* v = list->Add();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  if (ranked) {
    auto* s = t->mutable_shape();
    for (int64_t d : dims) s->add_dim()->set_dim_value(d);
  }
}

onnx::NodeProto* node(onnx::GraphProto& g, const std::string& op, std::vector<std::string> in,
                      std::vector<std::string> out, const std::string& name = "") {
  auto* n = g.add_node();
  n->set_op_type(op);
  if (!name.empty()) n->set_name(name);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

void graph_attr(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

void int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void ints_attr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

onnx::ModelProto model_of(const onnx::GraphProto& g, int64_t opset = 17) {
  onnx::ModelProto mp;
  mp.set_ir_version(8);
  mp.add_opset_import()->set_version(opset);
  *mp.mutable_graph() = g;
  return mp;
}

Model load(const onnx::ModelProto& mp) {
  auto m = load_model_from_bytes(mp.SerializeAsString(), ".");
  INFO(m.status().message());
  REQUIRE(m.ok());
  return std::move(m).value();
}

std::map<std::string, Tensor> run(const Model& m, const std::map<std::string, Tensor>& feeds) {
  auto ex = Executor::create(m);
  INFO(ex.status().message());
  REQUIRE(ex.ok());
  auto out = (*ex)->run(feeds);
  INFO(out.status().message());
  REQUIRE(out.ok());
  return *out;
}

Tensor flag(bool v) {
  Tensor t = Tensor::host(DType::kBool, {});
  t.data<bool>()[0] = v;
  return t;
}

// A Loop body (i, cond_in, acc) whose first node makes acc_next = acc + x,
// x read from outside; its outputs are the caller's to add.
onnx::GraphProto accumulating_body() {
  onnx::GraphProto body;
  body.set_name("body");
  value(body.mutable_input(), "i", I64, {});
  value(body.mutable_input(), "cond_in", B, {});
  value(body.mutable_input(), "acc", F, {2});
  node(body, "Add", {"acc", "x"}, {"acc_next"});
  return body;
}

// y = If(c) { w * x } else { w - x } with w = x + x: both branches read outer values.
onnx::ModelProto if_model() {
  onnx::GraphProto then_g, else_g, g;
  then_g.set_name("then");
  node(then_g, "Mul", {"w", "x"}, {"t"});
  value(then_g.mutable_output(), "t", F, {3});
  else_g.set_name("else");
  node(else_g, "Sub", {"w", "x"}, {"e"});
  value(else_g.mutable_output(), "e", F, {3});
  value(g.mutable_input(), "x", F, {3});
  value(g.mutable_input(), "c", B, {});
  node(g, "Add", {"x", "x"}, {"w"});
  auto* n = node(g, "If", {"c"}, {"y"}, "choose");
  graph_attr(n, "then_branch", then_g);
  graph_attr(n, "else_branch", else_g);
  value(g.mutable_output(), "y", F, {3});
  return model_of(g);
}

}  // namespace

TEST_CASE("If reads outer values through explicit captures and runs the branch its condition picks",
          "[graph][control_flow]") {
  Model m = load(if_model());
  const Node& n = m.graph.nodes.back();
  CHECK(is_control_flow(n));
  CHECK(n.inputs == std::vector<std::string>{"c", "w", "x"});
  CHECK(num_captures(n) == 2);
  CHECK(subgraph(n, "then_branch")->inputs.size() == 2);
  CHECK(m.graph.value("y")->dtype == DType::kFloat);
  Tensor x = make<float>({3}, {1, 2, 3});
  require_close(run(m, {{"x", x}, {"c", flag(true)}}).at("y"), make<float>({3}, {2, 8, 18}));
  require_close(run(m, {{"x", x}, {"c", flag(false)}}).at("y"), make<float>({3}, {1, 2, 3}));
}

TEST_CASE("An If whose untaken branch does not fit the node is refused, though only the taken one runs",
          "[graph][control_flow]") {
  // The condition is a constant, so inference needs only then_branch; the
  // gradient differentiates both, and read past else_branch's outputs.
  onnx::GraphProto then_g, else_g, g;
  then_g.set_name("then");
  node(then_g, "Add", {"x", "x"}, {"t"});
  value(then_g.mutable_output(), "t", F, {3});
  else_g.set_name("else");
  node(else_g, "Add", {"x", "x"}, {"e"});  // no outputs
  value(g.mutable_input(), "x", F, {3});
  auto* c = g.add_initializer();
  c->set_name("c");
  c->set_data_type(B);
  c->add_int32_data(1);
  auto* n = node(g, "If", {"c"}, {"y"}, "choose");
  graph_attr(n, "then_branch", then_g);
  graph_attr(n, "else_branch", else_g);
  value(g.mutable_output(), "y", F, {3});
  Model m = load(model_of(g));
  Status st = infer_shapes(m);
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("choose") && Catch::Contains("else_branch has 1 inputs and 0 outputs"));
}

TEST_CASE("A saved If is ONNX's again: captures read from the outer scope", "[graph][control_flow]") {
  Dir d("ort_train_control_flow_save");
  Model m = load(if_model());
  REQUIRE(save_model(m, d / "if.onnx").ok());
  onnx::ModelProto saved;
  std::ifstream f(d / "if.onnx", std::ios::binary);
  REQUIRE(saved.ParseFromIstream(&f));
  const onnx::NodeProto& n = saved.graph().node(1);
  CHECK(n.op_type() == "If");
  CHECK(n.domain().empty());
  CHECK(n.input_size() == 1);
  for (const auto& a : n.attribute()) {
    CHECK(a.name() != "num_captures");
    if (a.type() == onnx::AttributeProto::GRAPH) CHECK(a.g().input_size() == 0);
  }
  // A capture renamed in the outer graph is read under its new name.
  Node& in_memory = m.graph.nodes.back();
  m.graph.nodes[0].outputs[0] = "w2";
  in_memory.inputs[1] = "w2";
  REQUIRE(save_model(m, d / "renamed.onnx").ok());
  auto again = load_model(d / "renamed.onnx");
  REQUIRE(again.ok());
  CHECK(again->graph.nodes.back().inputs == std::vector<std::string>{"c", "w2", "x"});
  require_close(run(*again, {{"x", make<float>({3}, {1, 2, 3})}, {"c", flag(true)}}).at("y"),
                make<float>({3}, {2, 8, 18}));
}

TEST_CASE("Loop carries values, stacks scan outputs and stops on its trip count or its condition",
          "[graph][control_flow]") {
  // body(i, cond, acc): acc' = acc + x (x from outside), s = acc' * float(i); cond' = i < stop.
  auto loop_model = [](bool with_m, bool with_cond) {
    onnx::GraphProto body = accumulating_body(), g;
    auto* cast = node(body, "Cast", {"i"}, {"i_f"});
    int_attr(cast, "to", F);
    node(body, "Mul", {"acc_next", "i_f"}, {"s"});
    node(body, "Less", {"i", "stop"}, {"cond_out"});
    value(body.mutable_output(), "cond_out", B, {});
    value(body.mutable_output(), "acc_next", F, {2});
    value(body.mutable_output(), "s", F, {2});
    value(g.mutable_input(), "x", F, {2});
    auto* m = g.add_initializer();
    m->set_name("M");
    m->set_data_type(I64);
    m->add_int64_data(4);
    auto* stop = g.add_initializer();
    stop->set_name("stop");
    stop->set_data_type(I64);
    stop->add_int64_data(1);
    auto* t = g.add_initializer();
    t->set_name("true");
    t->set_data_type(B);
    t->add_int32_data(1);
    auto* n = node(g, "Loop", {with_m ? "M" : "", with_cond ? "true" : "", "x"}, {"acc_final", "scans"}, "loop");
    graph_attr(n, "body", body);
    value(g.mutable_output(), "acc_final", F, {2});
    value(g.mutable_output(), "scans", F, {}, false);
    return model_of(g);
  };
  Tensor x = make<float>({2}, {1, 10});
  SECTION("trip count only: the body's condition is ignored") {
    Model m = load(loop_model(true, false));
    REQUIRE(infer_shapes(m).ok());
    CHECK(m.graph.value("scans")->shape == OptShape(Shape{4, 2}));  // four trips, known at plan time
    auto out = run(m, {{"x", x}});
    require_close(out.at("acc_final"), make<float>({2}, {5, 50}));
    require_close(out.at("scans"), make<float>({4, 2}, {0, 0, 3, 30, 8, 80, 15, 150}));
  }
  SECTION("trip count and condition: stops when i < 1 turns false, after two trips") {
    auto out = run(load(loop_model(true, true)), {{"x", x}});
    require_close(out.at("acc_final"), make<float>({2}, {3, 30}));
    require_close(out.at("scans"), make<float>({2, 2}, {0, 0, 3, 30}));
  }
  SECTION("neither: refused, never run forever") {
    auto ex = Executor::create(load(loop_model(false, false)));
    REQUIRE(ex.ok());
    auto out = (*ex)->run({{"x", x}});
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.status().message(), Catch::Contains("neither a trip count nor a condition never ends"));
  }
}

TEST_CASE("Scan walks its input along an axis, forwards or backwards, and stacks where it is told",
          "[graph][control_flow]") {
  // state' = state + element; out = state' * k (k from outside). X is [2, 3]: scanned along axis 1, reversed.
  onnx::GraphProto body, g;
  body.set_name("body");
  value(body.mutable_input(), "state", F, {2});
  value(body.mutable_input(), "elem", F, {2});
  node(body, "Add", {"state", "elem"}, {"next"});
  node(body, "Mul", {"next", "k"}, {"out"});
  value(body.mutable_output(), "next", F, {2});
  value(body.mutable_output(), "out", F, {2});
  value(g.mutable_input(), "s0", F, {2});
  value(g.mutable_input(), "X", F, {2, 3});
  value(g.mutable_input(), "k", F, {});
  auto* n = node(g, "Scan", {"s0", "X"}, {"final", "outs"}, "scan");
  graph_attr(n, "body", body);
  int_attr(n, "num_scan_inputs", 1);
  ints_attr(n, "scan_input_axes", {1});
  ints_attr(n, "scan_input_directions", {1});
  ints_attr(n, "scan_output_axes", {1});
  value(g.mutable_output(), "final", F, {2});
  value(g.mutable_output(), "outs", F, {2, 3});
  Model m = load(model_of(g));
  REQUIRE(infer_shapes(m).ok());
  CHECK(m.graph.value("outs")->shape == OptShape(Shape{2, 3}));
  auto out = run(m, {{"s0", make<float>({2}, {0, 100})},
                     {"X", make<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                     {"k", make<float>({}, {2})}});
  // Reversed: elements [3,6], [2,5], [1,4]; states 3/106, 5/111, 6/115.
  require_close(out.at("final"), make<float>({2}, {6, 115}));
  require_close(out.at("outs"), make<float>({2, 3}, {6, 10, 12, 212, 222, 230}));
}

TEST_CASE("Scan before opset 9 scans each batch entry for its own length, from its own end when reversed",
          "[graph][control_flow]") {
  onnx::GraphProto body, g;
  body.set_name("body");
  value(body.mutable_input(), "state", F, {2});
  value(body.mutable_input(), "elem", F, {2});
  node(body, "Add", {"state", "elem"}, {"next"});
  node(body, "Identity", {"next"}, {"out"});
  value(body.mutable_output(), "next", F, {2});
  value(body.mutable_output(), "out", F, {2});
  value(g.mutable_input(), "lens", I64, {2});
  value(g.mutable_input(), "s0", F, {2, 2});
  value(g.mutable_input(), "X", F, {2, 3, 2});
  auto* n = node(g, "Scan", {"lens", "s0", "X"}, {"final", "outs"}, "scan8");
  graph_attr(n, "body", body);
  int_attr(n, "num_scan_inputs", 1);
  ints_attr(n, "directions", {1});
  value(g.mutable_output(), "final", F, {2, 2});
  value(g.mutable_output(), "outs", F, {2, 3, 2});
  Model m = load(model_of(g, 8));
  auto out = run(m, {{"lens", make<int64_t>({2}, {3, 1})},
                     {"s0", make<float>({2, 2}, {0, 0, 100, 100})},
                     {"X", make<float>({2, 3, 2}, {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60})}});
  require_close(out.at("final"), make<float>({2, 2}, {9, 12, 110, 120}));
  require_close(out.at("outs"), make<float>({2, 3, 2}, {5, 6, 8, 10, 9, 12, 110, 120, 0, 0, 0, 0}));
}

TEST_CASE("A Scan over an empty tensor with a sequence axis of 2^40 is refused before it steps",
          "[graph][control_flow]") {
  // An empty tensor costs no memory whatever its other sizes: the step count
  // is bounded as a Loop's trips are, not walked for hours.
  onnx::GraphProto body, g;
  body.set_name("body");
  value(body.mutable_input(), "state", F, {}, false);
  value(body.mutable_input(), "elem", F, {}, false);
  node(body, "Add", {"state", "elem"}, {"next"});
  value(body.mutable_output(), "next", F, {}, false);
  value(g.mutable_input(), "s0", F, {}, false);
  value(g.mutable_input(), "X", F, {}, false);
  const int64_t huge = int64_t{1} << 40;
  SECTION("opset 9 on: one sequence") {
    auto* n = node(g, "Scan", {"s0", "X"}, {"final"}, "long_scan");
    graph_attr(n, "body", body);
    int_attr(n, "num_scan_inputs", 1);
    ints_attr(n, "scan_input_axes", {1});
    value(g.mutable_output(), "final", F, {}, false);
    auto ex = Executor::create(load(model_of(g)));
    REQUIRE(ex.ok());
    auto out = (*ex)->run({{"s0", make<float>({0}, {})}, {"X", Tensor::host(DType::kFloat, {0, huge})}});
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.status().message(),
               Catch::Contains("long_scan") && Catch::Contains("a sequence of 1099511627776 steps; a Scan may take"));
  }
  SECTION("opset 8: a batch of sequences") {
    auto* n = node(g, "Scan", {"", "s0", "X"}, {"final"}, "long_scan8");
    graph_attr(n, "body", body);
    int_attr(n, "num_scan_inputs", 1);
    value(g.mutable_output(), "final", F, {}, false);
    auto ex = Executor::create(load(model_of(g, 8)));
    REQUIRE(ex.ok());
    auto out = (*ex)->run({{"s0", Tensor::host(DType::kFloat, {huge, 0})}, {"X", Tensor::host(DType::kFloat, {huge, 0})}});
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.status().message(),
               Catch::Contains("long_scan8") && Catch::Contains("1099511627776 sequences of 0 steps; a Scan may take"));
  }
}

TEST_CASE("A Loop body's If reads the outermost graph's values", "[graph][control_flow]") {
  // Loop 3 trips: acc' = If(i < 1) { acc + x } else { acc * x }.
  onnx::GraphProto then_g, else_g, body, g;
  then_g.set_name("then");
  node(then_g, "Add", {"acc", "x"}, {"t"});
  value(then_g.mutable_output(), "t", F, {2});
  else_g.set_name("else");
  node(else_g, "Mul", {"acc", "x"}, {"e"});
  value(else_g.mutable_output(), "e", F, {2});
  body.set_name("body");
  value(body.mutable_input(), "i", I64, {});
  value(body.mutable_input(), "cond_in", B, {});
  value(body.mutable_input(), "acc", F, {2});
  node(body, "Less", {"i", "one"}, {"first"});
  auto* inner = node(body, "If", {"first"}, {"acc_next"}, "inner");
  graph_attr(inner, "then_branch", then_g);
  graph_attr(inner, "else_branch", else_g);
  node(body, "Identity", {"cond_in"}, {"cond_out"});
  value(body.mutable_output(), "cond_out", B, {});
  value(body.mutable_output(), "acc_next", F, {2});
  value(g.mutable_input(), "x", F, {2});
  value(g.mutable_input(), "acc0", F, {2});
  for (auto [name, v] : {std::pair{"M", 3}, std::pair{"one", 1}}) {
    auto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(I64);
    t->add_int64_data(v);
  }
  auto* n = node(g, "Loop", {"M", "", "acc0"}, {"acc"}, "outer");
  graph_attr(n, "body", body);
  value(g.mutable_output(), "acc", F, {2});
  Model m = load(model_of(g));
  // The body captures x (for its If) and `one`.
  CHECK(m.graph.nodes.back().inputs == std::vector<std::string>{"M", "", "acc0", "one", "x"});
  auto out = run(m, {{"x", make<float>({2}, {2, 3})}, {"acc0", make<float>({2}, {1, 1})}});
  require_close(out.at("acc"), make<float>({2}, {12, 36}));  // (1 + x) * x * x
}

TEST_CASE("An unsupported op inside a subgraph is listed with its path", "[graph][control_flow]") {
  onnx::ModelProto mp = if_model();
  auto* branch = mp.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
  branch->mutable_node(0)->set_op_type("NoSuchOp");
  branch->mutable_node(0)->set_name("odd");
  Model m = load(mp);
  Status st = check_ops_known(m);
  REQUIRE_FALSE(st.ok());
  CHECK_THAT(st.message(), Catch::Contains("choose/odd (NoSuchOp opset 17)"));
}

TEST_CASE("A file holding the in-memory form of If is refused", "[graph][control_flow]") {
  onnx::ModelProto mp = if_model();
  auto* n = mp.mutable_graph()->mutable_node(1);
  n->set_domain("com.ort_train");
  int_attr(n, "num_captures", 99);
  auto m = load_model_from_bytes(mp.SerializeAsString(), ".");
  REQUIRE_FALSE(m.ok());
  CHECK_THAT(m.status().message(), Catch::Contains("in-memory form"));
}

TEST_CASE("Subgraphs nested past the limit are refused", "[graph][control_flow]") {
  onnx::GraphProto leaf;
  leaf.set_name("leaf");
  node(leaf, "Identity", {"v"}, {"o"});
  value(leaf.mutable_output(), "o", F, {1});
  onnx::GraphProto inner = leaf;
  for (int depth = 0; depth < kMaxSubgraphDepth + 1; ++depth) {
    onnx::GraphProto outer;
    outer.set_name("level");
    auto* n = node(outer, "If", {"c"}, {"o"});
    graph_attr(n, "then_branch", inner);
    graph_attr(n, "else_branch", leaf);
    value(outer.mutable_output(), "o", F, {1});
    inner = outer;
  }
  value(inner.mutable_input(), "c", B, {});
  value(inner.mutable_input(), "v", F, {1});
  auto m = load_model_from_bytes(model_of(inner).SerializeAsString(), ".");
  REQUIRE_FALSE(m.ok());
  CHECK_THAT(m.status().message(), Catch::Contains("nested more than 16 deep"));
}

TEST_CASE("loop_unrolling writes out a Loop of fixed trips and leaves one longer than a Loop may run",
          "[graph][control_flow][passes]") {
  // body(i, cond, acc): acc' = acc + x; a trip count M and no condition.
  auto loop_model = [](int64_t trips) {
    onnx::GraphProto body = accumulating_body(), g;
    node(body, "Identity", {"cond_in"}, {"cond_out"});
    value(body.mutable_output(), "cond_out", B, {});
    value(body.mutable_output(), "acc_next", F, {2});
    value(g.mutable_input(), "x", F, {2});
    auto* m = g.add_initializer();
    m->set_name("M");
    m->set_data_type(I64);
    m->add_int64_data(trips);
    graph_attr(node(g, "Loop", {"M", "", "x"}, {"acc_final"}, "loop"), "body", body);
    value(g.mutable_output(), "acc_final", F, {2});
    return load(model_of(g));
  };
  auto unrolled = [](Model& m) {
    PassContext ctx;
    auto changed = PassRegistry::instance().create("loop_unrolling")->apply(m, ctx);
    INFO(changed.status().message());
    REQUIRE(changed.ok());
    return *changed;
  };
  Tensor x = make<float>({2}, {1, 10});
  SECTION("four trips: four Adds, the Loop's result") {
    Model m = loop_model(4);
    REQUIRE(unrolled(m));
    CHECK(std::none_of(m.graph.nodes.begin(), m.graph.nodes.end(), [](const Node& n) { return n.op_type == "Loop"; }));
    require_close(run(m, {{"x", x}}).at("acc_final"), make<float>({2}, {5, 50}));
  }
  SECTION("more trips than a Loop may run: left to its kernel, which refuses it by name") {
    const int64_t saved = max_loop_trips();
    max_loop_trips() = 8;
    Model m = loop_model(9);
    CHECK_FALSE(unrolled(m));
    auto ex = Executor::create(m);
    REQUIRE(ex.ok());
    auto out = (*ex)->run({{"x", x}});
    max_loop_trips() = saved;
    REQUIRE_FALSE(out.ok());
    // Its count is fixed (no condition): refused before its first trip.
    CHECK_THAT(out.status().message(), Catch::Contains("loop") && Catch::Contains("9 trips of a fixed count") &&
                                           Catch::Contains("more than the 8 trips"));
  }
  SECTION("a trip count whose product with the body's size overflows int64: left alone, no overflow") {
    Model m = loop_model(int64_t{1} << 62);
    CHECK_FALSE(unrolled(m));
  }
  SECTION("the nodes written out are bounded for the whole graph, over every run of the pass") {
    // 8000 trips of 2 nodes fit the 20000-node budget once, not twice: a
    // second Loop (or the copies of a nested one, on the next run) stays a Loop.
    auto pass = PassRegistry::instance().create("loop_unrolling");
    PassContext ctx;
    Model first = loop_model(8000), second = loop_model(8000);
    auto a = pass->apply(first, ctx);
    REQUIRE(a.ok());
    CHECK(*a);
    CHECK(first.graph.nodes.size() >= 16000);
    auto b = pass->apply(second, ctx);
    REQUIRE(b.ok());
    CHECK_FALSE(*b);
    CHECK(second.graph.nodes.size() == 1);
    // A fresh optimization has its own budget.
    Model third = loop_model(8000);
    CHECK(unrolled(third));
  }
}

// Issue 52, item 1: the work of control flow bounded in all, not loop by loop.
TEST_CASE("Nested Loops are bounded by their trips in all, and a carried value that grows by the elements it carried",
          "[graph][control_flow]") {
  auto int64_init = [](onnx::GraphProto& g, const std::string& name, int64_t v) {
    auto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(I64);
    t->add_int64_data(v);
  };
  SECTION("two nested Loops, each under the limit: refused when their trips together pass it") {
    // inner body: acc' = acc + x; outer body: acc' = Loop(inner)(acc).
    onnx::GraphProto inner = accumulating_body(), outer, g;
    node(inner, "Identity", {"cond_in"}, {"cond_out"});
    value(inner.mutable_output(), "cond_out", B, {});
    value(inner.mutable_output(), "acc_next", F, {2});
    outer.set_name("outer");
    value(outer.mutable_input(), "j", I64, {});
    value(outer.mutable_input(), "c", B, {});
    value(outer.mutable_input(), "a", F, {2});
    int64_init(outer, "M_inner", 6);
    auto* in = node(outer, "Loop", {"M_inner", "", "a"}, {"a_next"}, "inner_loop");
    graph_attr(in, "body", inner);
    node(outer, "Identity", {"c"}, {"c_out"});
    value(outer.mutable_output(), "c_out", B, {});
    value(outer.mutable_output(), "a_next", F, {2});
    value(g.mutable_input(), "x", F, {2});
    int64_init(g, "M_outer", 6);
    auto* n = node(g, "Loop", {"M_outer", "", "x"}, {"y"}, "outer_loop");
    graph_attr(n, "body", outer);
    value(g.mutable_output(), "y", F, {2});
    Model m = load(model_of(g));
    const int64_t saved = max_loop_trips();
    max_loop_trips() = 30;  // each Loop's 6 trips fit; 6 + 36 inner trips do not
    auto ex = Executor::create(m);
    REQUIRE(ex.ok());
    auto out = (*ex)->run({{"x", make<float>({2}, {1, 10})}});
    max_loop_trips() = 64;  // 42 trips in all: they fit
    auto fits = (*ex)->run({{"x", make<float>({2}, {1, 10})}});
    max_loop_trips() = saved;
    REQUIRE_FALSE(out.ok());
    // Both trip counts are fixed: refused as the inner Loop starts (6 trips,
    // each of the 6 outer trips left), before 2^24 trivial trips ran (84 s).
    CHECK_THAT(out.status().message(), Catch::Contains("inner_loop") && Catch::Contains("6 trips of a fixed count") &&
                                           Catch::Contains("each of 6 times it certainly runs") &&
                                           Catch::Contains("more than the 30 trips"));
    INFO(fits.status().message());
    REQUIRE(fits.ok());
    require_close(fits->at("y"), make<float>({2}, {37, 370}));  // x + 36 x
  }
  SECTION("a Loop of a fixed count past the bound is refused before its first trip; one that may stop early is not") {
    // PyTorch's `for` export: M, a constant true condition the body passes on.
    auto loop = [&](bool passes_condition_on) {
      onnx::GraphProto body = accumulating_body(), g;
      if (passes_condition_on) {
        node(body, "Identity", {"cond_in"}, {"cond_out"});
      } else {
        node(body, "Not", {"cond_in"}, {"not_cond"});
        node(body, "Not", {"not_cond"}, {"cond_out"});  // stays true, but the kernel cannot know
      }
      value(body.mutable_output(), "cond_out", B, {});
      value(body.mutable_output(), "acc_next", F, {2});
      value(g.mutable_input(), "x", F, {2});
      int64_init(g, "M", 50);
      auto* t = g.add_initializer();
      t->set_name("go");
      t->set_data_type(B);
      t->add_int32_data(1);
      graph_attr(node(g, "Loop", {"M", "go", "x"}, {"y"}, "for_loop"), "body", body);
      value(g.mutable_output(), "y", F, {2});
      return load(model_of(g));
    };
    const int64_t saved = max_loop_trips();
    max_loop_trips() = 20;
    auto fixed = Executor::create(loop(true));
    REQUIRE(fixed.ok());
    auto refused = (*fixed)->run({{"x", make<float>({2}, {1, 10})}});
    auto open = Executor::create(loop(false));
    REQUIRE(open.ok());
    auto stopped = (*open)->run({{"x", make<float>({2}, {1, 10})}});
    max_loop_trips() = saved;
    REQUIRE_FALSE(refused.ok());
    CHECK_THAT(refused.status().message(), Catch::Contains("50 trips of a fixed count (its condition stays true) are "
                                                           "more than the 20 trips"));
    REQUIRE_FALSE(stopped.ok());  // counted trip by trip instead
    CHECK_THAT(stopped.status().message(), Catch::Contains("ran 20 trips, the most a Loop may"));
  }
  SECTION("a Loop whose carried value grows by a Concat each trip: refused by the elements carried") {
    onnx::GraphProto body, g;
    body.set_name("grow");
    value(body.mutable_input(), "i", I64, {});
    value(body.mutable_input(), "c", B, {});
    value(body.mutable_input(), "v", F, {}, false);
    auto* cat = node(body, "Concat", {"v", "v"}, {"v_next"});
    int_attr(cat, "axis", 0);
    node(body, "Identity", {"c"}, {"c_out"});
    value(body.mutable_output(), "c_out", B, {});
    value(body.mutable_output(), "v_next", F, {}, false);
    value(g.mutable_input(), "x", F, {1});
    int64_init(g, "M", 40);  // 2^40 elements by the last trip, were it allowed
    auto* n = node(g, "Loop", {"M", "", "x"}, {"y"}, "doubling");
    graph_attr(n, "body", body);
    value(g.mutable_output(), "y", F, {}, false);
    const int64_t saved = max_loop_elements();
    max_loop_elements() = 1000;
    auto ex = Executor::create(load(model_of(g)));
    REQUIRE(ex.ok());
    auto out = (*ex)->run({{"x", make<float>({1}, {1})}});
    max_loop_elements() = saved;
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.status().message(),
               Catch::Contains("doubling") && Catch::Contains("carried more than 1000 elements in all"));
  }
}

// Issue 52, item 1: trips each bounded can still do hours of work (a body
// that multiplies large matrices, 2^24 trivial trips of a while loop); the
// work of the outermost node is bounded too (graph/control_flow.h).
TEST_CASE("Control flow's work is bounded in all: a fixed Loop after its first trip, a while loop as it goes",
          "[graph][control_flow]") {
  // acc' = MatMul(acc, w) over [8, 8] (512 multiply-adds, 64 elements a trip).
  auto loop = [](bool fixed, int64_t trips) {
    onnx::GraphProto body, g;
    body.set_name("body");
    value(body.mutable_input(), "i", I64, {});
    value(body.mutable_input(), "cond_in", B, {});
    value(body.mutable_input(), "acc", F, {8, 8});
    node(body, "MatMul", {"acc", "w"}, {"acc_next"});
    if (fixed) {
      node(body, "Identity", {"cond_in"}, {"cond_out"});
    } else {
      node(body, "Not", {"cond_in"}, {"not_cond"});
      node(body, "Not", {"not_cond"}, {"cond_out"});  // stays true, but the kernel cannot know
    }
    value(body.mutable_output(), "cond_out", B, {});
    value(body.mutable_output(), "acc_next", F, {8, 8});
    value(g.mutable_input(), "x", F, {8, 8});
    value(g.mutable_input(), "w", F, {8, 8});
    auto* m = g.add_initializer();
    m->set_name("M");
    m->set_data_type(I64);
    m->add_int64_data(trips);
    auto* go = g.add_initializer();
    go->set_name("go");
    go->set_data_type(B);
    go->add_int32_data(1);
    graph_attr(node(g, "Loop", {"M", "go", "x"}, {"y"}, fixed ? "for_loop" : "while_loop"), "body", body);
    value(g.mutable_output(), "y", F, {8, 8});
    return load(model_of(g));
  };
  std::vector<float> eye(64, 0.f);
  for (int i = 0; i < 8; ++i) eye[static_cast<size_t>(i * 9)] = 1.f;
  const Tensor x = random_tensor({8, 8}, 3), w = make<float>({8, 8}, eye);
  const int64_t saved = max_loop_work();
  // A trip: the trip's own units, 2 or 3 kernel runs, 64 + 1 (or 2) elements and 512 multiply-adds.
  max_loop_work() = 20 * (kTripWork + 3 * kNodeRunWork + 1024);
  auto run_loop = [&](bool fixed, int64_t trips) {
    auto ex = Executor::create(loop(fixed, trips));
    REQUIRE(ex.ok());
    return (*ex)->run({{"x", x}, {"w", w}});
  };
  auto fits_fixed = run_loop(true, 12), fits_while = run_loop(false, 12);
  auto refused_fixed = run_loop(true, 1000), refused_while = run_loop(false, 1000);
  max_loop_work() = saved;
  INFO(fits_fixed.status().message() << " / " << fits_while.status().message());
  REQUIRE(fits_fixed.ok());
  REQUIRE(fits_while.ok());
  require_close(fits_fixed->at("y"), x);  // x times the identity, 12 times
  REQUIRE_FALSE(refused_fixed.ok());
  // Fixed: refused after its first trip, from that trip's work.
  CHECK_THAT(refused_fixed.status().message(),
             Catch::Contains("for_loop") && Catch::Contains("1000 trips at its first trip's") &&
                 Catch::Contains("units of work would do more than"));
  REQUIRE_FALSE(refused_while.ok());
  // While: counted as it goes, refused once its work passes the bound.
  CHECK_THAT(refused_while.status().message(),
             Catch::Contains("while_loop") && Catch::Contains("its trips did more than") &&
                 Catch::Contains("units of work in all"));
}

TEST_CASE("An RNN over an empty batch with a sequence axis of 2^40 is refused before it steps",
          "[graph][control_flow]") {
  onnx::GraphProto g;
  value(g.mutable_input(), "X", F, {}, false);
  value(g.mutable_input(), "W", F, {1, 2, 3});
  value(g.mutable_input(), "R", F, {1, 2, 2});
  auto* n = node(g, "RNN", {"X", "W", "R"}, {"Y"}, "long_rnn");
  int_attr(n, "hidden_size", 2);
  value(g.mutable_output(), "Y", F, {}, false);
  auto ex = Executor::create(load(model_of(g)));
  REQUIRE(ex.ok());
  const int64_t huge = int64_t{1} << 40;
  auto out = (*ex)->run({{"X", Tensor::host(DType::kFloat, {huge, 0, 3})}, {"W", random_tensor({1, 2, 3}, 1)},
                         {"R", random_tensor({1, 2, 2}, 2)}});
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(out.status().message(),
             Catch::Contains("long_rnn") && Catch::Contains("a sequence of 1099511627776 steps; a recurrence may take"));
}
