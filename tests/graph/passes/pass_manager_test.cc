// The pass manager: default list to a fixed point with a per-pass report,
// consistent graph.values afterwards, unknown and disabled names, the round
// cap, and a pass that breaks the graph caught by name.
#include "graph/passes/pass_manager.h"

#include "graph/passes/pass_test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// Changes the model every time (renames the graph), so it never settles.
class NeverSettles : public Pass {
 public:
  std::string name() const override { return "test_never_settles"; }
  Result<bool> apply(Model& model, const PassContext& ctx) override {
    model.graph.name += "+";
    ctx.count(1);
    return true;
  }
};
ORT_REGISTER_PASS(NeverSettles);

// Reverses the node order: an invalid graph whenever one node reads another.
class BreaksOrder : public Pass {
 public:
  std::string name() const override { return "test_breaks_order"; }
  Result<bool> apply(Model& model, const PassContext&) override {
    std::reverse(model.graph.nodes.begin(), model.graph.nodes.end());
    return true;
  }
};
ORT_REGISTER_PASS(BreaksOrder);

// y = x * (a + b) + x * (b + a'), a' a copy of a; plus a dead Relu(x) and a
// Constant; 'w' is a trainable weight read by z = x * w.
Model pipeline_model() {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, {2, 3});
  add_initializer(g, "a", make<float>({3}, {1, 2, 3}));
  add_initializer(g, "a_copy", make<float>({3}, {1, 2, 3}));
  add_initializer(g, "b", make<float>({3}, {10, 20, 30}));
  add_initializer(g, "w", make<float>({3}, {0.5f, 0.25f, 2}));
  g.nodes.push_back(node("sum1", "Add", {"a", "b"}, {"s1"}));
  g.nodes.push_back(node("sum2", "Add", {"a_copy", "b"}, {"s2"}));
  g.nodes.push_back(node("mul1", "Mul", {"x", "s1"}, {"m1"}));
  g.nodes.push_back(node("mul2", "Mul", {"x", "s2"}, {"m2"}));
  g.nodes.push_back(node("add", "Add", {"m1", "m2"}, {"y"}));
  g.nodes.push_back(node("dead", "Relu", {"x"}, {"unused"}));
  g.nodes.push_back(node("scale", "Mul", {"x", "w"}, {"z"}));
  add_output(g, "y");
  add_output(g, "z");
  g.declared_value_infos = {"m2", "unused"};
  for (const char* v : {"s1", "s2", "m1", "m2", "unused"}) g.values[v] = ValueInfo{v, DType::kFloat, std::nullopt, ""};
  return m;
}

std::map<std::string, Tensor> x_feed() { return {{"x", make<float>({2, 3}, {1, -1, 2, -2, 3, -3})}}; }

}  // namespace

TEST_CASE("pass manager: the default passes reach a fixed point", "[passes][pass_manager]") {
  Model m = pipeline_model();
  auto before = run_model(m, x_feed());
  auto report = run_passes(m, {"w"});
  INFO(report.status().message());
  REQUIRE(report.ok());
  const Graph& g = m.graph;
  // Folding: s1, s2 become initializers, and a, a_copy, b go with their last
  // reader; DCE: the Relu goes; CSE: s2 (same bytes as s1) merges, then mul2
  // into mul1; DCE: s2's leftovers.
  REQUIRE(g.nodes.size() == 3);
  REQUIRE(count_op(m, "Mul") == 2);
  REQUIRE(count_op(m, "Add") == 1);
  REQUIRE(g.nodes[1].op_type == "Add");
  REQUIRE(g.nodes[1].inputs == std::vector<std::string>{"m1", "m1"});
  REQUIRE(g.is_initializer("w"));
  require_close(g.initializers.at("w"), make<float>({3}, {0.5f, 0.25f, 2}));
  REQUIRE(report->fixed_point);
  REQUIRE(report->rounds >= 2);
  REQUIRE(report->rounds <= 3);
  REQUIRE(report->passes.size() == default_pass_names().size());
  for (const auto& [name, stats] : report->passes) {
    INFO(name);
    // Each runs in the first round and again only after another pass changed the graph.
    REQUIRE(stats.runs >= 1);
    REQUIRE(stats.runs <= report->rounds);
  }
  REQUIRE(report->passes.at("constant_folding").changed == 2);
  REQUIRE(report->passes.at("common_subexpression_elimination").changed == 2);
  REQUIRE(report->passes.at("dead_code_elimination").changed >= 1);
  for (const char* gone : {"a", "a_copy", "b"}) REQUIRE_FALSE(g.is_initializer(gone));
  REQUIRE_THAT(report->summary(), Catch::Contains("constant_folding: "));
  require_same_outputs(run_model(m, x_feed()), before);

  // graph.values holds exactly what is left: removed values gone, folded ones typed.
  REQUIRE(g.value("unused") == nullptr);
  REQUIRE(g.value("m2") == nullptr);
  REQUIRE(g.value("a") == nullptr);
  REQUIRE(g.declared_value_infos.empty());
  REQUIRE(g.value("s1")->dtype == DType::kFloat);
  REQUIRE(shape_to_string(g.value("s1")->shape) == "[3]");
  for (const auto& [name, info] : g.values) {
    INFO(name);
    bool present = g.is_initializer(name) || name == "x" || name == "y" || name == "z";
    for (const Node& n : g.nodes)
      present = present || std::count(n.outputs.begin(), n.outputs.end(), name) > 0;
    REQUIRE(present);
  }

  // Running again finds nothing to do, and the passes that read an index of
  // the graph share one (each built its own: ~15 per round, which made a
  // 100k-node graph's build take 18.7 s, docs/benchmarks.md).
  const int64_t builds = GraphIndex::builds();
  auto again = run_passes(m, {"w"});
  REQUIRE(again.ok());
  REQUIRE(again->rounds == 1);
  REQUIRE(again->fixed_point);
  for (const auto& [name, stats] : again->passes) REQUIRE(stats.changed == 0);
  CHECK(GraphIndex::builds() - builds == 1);
}

TEST_CASE("pass manager: unknown pass names list the known ones", "[passes][pass_manager]") {
  Model m = pipeline_model();
  PassManagerOptions options;
  options.passes = {"constant_folding", "loop_fission"};
  auto r = run_passes(m, {}, options);
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.status().code() == ErrorCode::kInvalidArgument);
  REQUIRE_THAT(r.status().message(), Catch::Contains("loop_fission"));
  REQUIRE_THAT(r.status().message(), Catch::Contains("dead_code_elimination"));
  REQUIRE(m.graph.nodes.size() == 7);  // checked before anything ran

  PassManagerOptions disabled_typo;
  disabled_typo.disabled = {"constant_foldin"};
  auto d = run_passes(m, {}, disabled_typo);
  REQUIRE_FALSE(d.ok());
  REQUIRE_THAT(d.status().message(), Catch::Contains("constant_foldin"));
}

TEST_CASE("pass manager: disabled passes do not run", "[passes][pass_manager]") {
  Model m = pipeline_model();
  PassManagerOptions options;
  options.disabled = {"constant_folding"};
  auto r = run_passes(m, {"w"}, options);
  REQUIRE(r.ok());
  REQUIRE(r->passes.count("constant_folding") == 0);
  REQUIRE(r->passes.size() == default_pass_names().size() - 1);
  REQUIRE(count_op(m, "Add") == 2);  // a + b stays a node; a_copy + b merged into it
  REQUIRE_FALSE(m.graph.is_initializer("s1"));
  REQUIRE(r->passes.at("dead_code_elimination").changed >= 1);  // the Relu

  Model none = pipeline_model();
  PassManagerOptions all_off;
  const std::vector<std::string> defaults = default_pass_names();
  all_off.disabled = {defaults.begin(), defaults.end()};
  all_off.disabled.insert("loop_unrolling");  // required in the forward phase: runs unless disabled
  auto n = run_passes(none, {}, all_off);
  REQUIRE(n.ok());
  REQUIRE(n->passes.empty());
  REQUIRE(n->fixed_point);
  REQUIRE(none.graph.nodes.size() == 7);
}

TEST_CASE("pass manager: a pass that never settles stops at the round cap", "[passes][pass_manager]") {
  Model m = pipeline_model();
  PassManagerOptions options;
  options.passes = {"test_never_settles", "dead_code_elimination"};
  options.max_rounds = 4;
  auto r = run_passes(m, {}, options);
  REQUIRE(r.ok());
  REQUIRE(r->rounds == 4);
  REQUIRE_FALSE(r->fixed_point);
  REQUIRE(r->passes.at("test_never_settles").runs == 4);
  REQUIRE(r->passes.at("test_never_settles").changed == 4);
  REQUIRE_THAT(r->summary(), Catch::Contains("round cap"));
  options.max_rounds = 0;
  REQUIRE_FALSE(run_passes(m, {}, options).ok());
}

TEST_CASE("pass manager: a pass that breaks the graph is named", "[passes][pass_manager]") {
  Model m = pipeline_model();
  PassManagerOptions options;
  options.passes = {"test_breaks_order"};
  options.max_rounds = 1;  // release builds check once at the end; an even number of reversals would undo it
  auto r = run_passes(m, {}, options);
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.status().code() == ErrorCode::kInternal);
  REQUIRE_THAT(r.status().message(), Catch::Contains("test_breaks_order"));
}

TEST_CASE("pass manager: an order that breaks a declared constraint is refused, naming both", "[passes][pass_manager]") {
  Model m = pipeline_model();
  PassManagerOptions options;
  // matmul_add_fusion declares that it follows bias_gelu_fusion (which takes a GELU's bias first).
  options.passes = {"constant_folding", "matmul_add_fusion", "bias_gelu_fusion"};
  auto r = run_passes(m, {}, options);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == ErrorCode::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("bias_gelu_fusion must run before matmul_add_fusion"));
  CHECK(m.graph.nodes.size() == 7);  // refused before anything ran
  // The same passes the other way round, or with the earlier one disabled, run.
  options.passes = {"constant_folding", "bias_gelu_fusion", "matmul_add_fusion"};
  CHECK(run_passes(m, {}, options).ok());
  options.passes = {"matmul_add_fusion", "bias_gelu_fusion"};
  options.disabled = {"bias_gelu_fusion"};
  CHECK(plan_passes(options).ok());
}

TEST_CASE("pass manager: the default order keeps every declared constraint in every phase", "[passes][pass_manager]") {
  for (DType precision : {DType::kFloat, DType::kBFloat16}) {
    for (PassPhase phase : {kAdapterPhase, kForwardPhase, kPrecisionPhase, kBackwardPhase, kRecomputePhase, kStepPhase}) {
      PassManagerOptions options;
      options.phase = phase;
      options.precision = precision;
      options.passes.push_back("half_activations");
      auto plan = plan_passes(options);
      INFO("phase " << phase << (plan.ok() ? "" : ": " + plan.status().message()));
      REQUIRE(plan.ok());
      for (size_t i = 0; i < plan->size(); ++i) {
        PassOrder o = PassRegistry::instance().create((*plan)[i])->order();
        CHECK((o.phases & phase) != 0);
        for (const std::string& first : o.after) {
          auto at = std::find(plan->begin(), plan->end(), first);
          CHECK((at == plan->end() || at < plan->begin() + static_cast<std::ptrdiff_t>(i)));
        }
      }
    }
  }
}

TEST_CASE("pass manager: required passes run in their phase, replaced ones in none", "[passes][pass_manager]") {
  PassManagerOptions none;
  none.passes = {};
  CHECK(*plan_passes(none) == std::vector<std::string>{"loop_unrolling"});
  none.phase = kStepPhase;
  CHECK(*plan_passes(none) == std::vector<std::string>{"state_outputs", "weight_cast_hoisting"});
  none.phase = kPrecisionPhase;
  CHECK(*plan_passes(none) == std::vector<std::string>{"autocast"});
  none.phase = kAdapterPhase;
  CHECK(*plan_passes(none) == std::vector<std::string>{"lora_adapters"});
  none.phase = kRecomputePhase;  // training/recompute.cc registers it
  CHECK(*plan_passes(none) == std::vector<std::string>{"recompute"});

  // half_activations, listed: with a 16-bit precision it runs, after autocast,
  // and bias_gelu_fusion runs in no phase; in float32 it runs nowhere and replaces nothing.
  PassManagerOptions options;
  options.passes.push_back("half_activations");
  options.precision = DType::kBFloat16;
  std::vector<std::string> replaced;
  auto forward = plan_passes(options, &replaced);
  REQUIRE(forward.ok());
  CHECK(std::find(forward->begin(), forward->end(), "bias_gelu_fusion") == forward->end());
  CHECK(std::find(forward->begin(), forward->end(), "half_activations") == forward->end());
  CHECK(replaced == std::vector<std::string>{"bias_gelu_fusion (replaced by half_activations)"});
  options.phase = kPrecisionPhase;
  CHECK(*plan_passes(options) == std::vector<std::string>{"autocast", "half_activations"});
  options.phase = kForwardPhase;
  options.precision = DType::kFloat;
  forward = plan_passes(options);
  CHECK(std::find(forward->begin(), forward->end(), "bias_gelu_fusion") != forward->end());
  options.precision = DType::kBFloat16;
  options.disabled = {"half_activations"};
  forward = plan_passes(options);
  CHECK(std::find(forward->begin(), forward->end(), "bias_gelu_fusion") != forward->end());
}

TEST_CASE("pass registry: names are unique", "[passes][pass_manager]") {
  auto& registry = PassRegistry::instance();
  REQUIRE_FALSE(registry.add("constant_folding", [] { return std::unique_ptr<Pass>(new NeverSettles()); }));
  REQUIRE(registry.create("constant_folding")->name() == "constant_folding");
  REQUIRE(registry.create("no_such_pass") == nullptr);
  auto names = registry.names();
  for (const std::string& d : default_pass_names())
    REQUIRE(std::find(names.begin(), names.end(), d) != names.end());
}
