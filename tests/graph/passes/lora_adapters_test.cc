// The lora_adapters pass: where adapters fit, what they compute (the adapted
// output is the base one plus scale X A B, which is also what merging A B
// into W gives), A's init, and the errors for targets that fit nothing.
#include <cmath>

#include "graph/passes/lora_adapters.h"
#include "pass_test_util.h"

namespace ort_train::testing {
namespace {

Result<bool> apply_lora(Model& m, LoraPlan& plan) {
  auto pass = PassRegistry::instance().create("lora_adapters");
  REQUIRE(pass != nullptr);
  PassContext ctx;
  ctx.lora = &plan;
  auto r = pass->apply(m, ctx);
  if (r.ok()) {
    Status valid = verify_graph(m.graph);
    INFO(valid.message());
    REQUIRE(valid.ok());
  }
  return r;
}

LoraPlan plan_for(std::vector<std::string> targets, int64_t rank = 2, double alpha = 6) {
  LoraPlan plan;
  plan.settings.targets = std::move(targets);
  plan.settings.rank = rank;
  plan.settings.alpha = alpha;
  plan.settings.seed = 7;
  return plan;
}

// One op reading the input x and the weight "layer.proj.weight" (through a
// Transpose when `transposed`), its output y a graph output.
Model one_layer(const std::string& op, Dims x_dims, Tensor w, std::vector<Attribute> attrs = {},
                bool transposed = false) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "x", DType::kFloat, x_dims);
  add_initializer(g, "layer.proj.weight", std::move(w));
  std::string weight = "layer.proj.weight";
  if (transposed) {
    g.nodes.push_back(node("/layer/proj/Transpose", "Transpose", {weight}, {"wt"}, {Attribute::make_ints("perm", {1, 0})}));
    weight = "wt";
  }
  g.nodes.push_back(node("/layer/proj/" + op, op, {"x", weight}, {"y"}, std::move(attrs)));
  add_output(g, "y");
  return m;
}

}  // namespace

TEST_CASE("lora_adapters: each weight form adds X A B scaled beside its op, equal to the merged weight's output",
          "[passes][lora]") {
  struct Form {
    const char* what;
    Model model;
    LoraLayout layout;
    int64_t in, out;
  };
  std::vector<Form> forms;
  forms.push_back({"MatMul(X, W), W [in, out]", one_layer("MatMul", {2, 3, 5}, random_tensor({5, 4}, 1)),
                   LoraLayout::kInOut, 5, 4});
  forms.push_back({"MatMul(X, Transpose(W)), W [out, in]",
                   one_layer("MatMul", {2, 3, 5}, random_tensor({4, 5}, 2), {}, true), LoraLayout::kOutIn, 5, 4});
  forms.push_back({"Gemm(X, W) with transB and alpha",
                   one_layer("Gemm", {3, 5}, random_tensor({4, 5}, 3),
                             {Attribute::make_int("transB", 1), Attribute::make_float("alpha", 0.5f)}),
                   LoraLayout::kOutIn, 5, 4});
  forms.push_back({"Gemm(X, W), W [in, out]", one_layer("Gemm", {3, 5}, random_tensor({5, 4}, 4)),
                   LoraLayout::kInOut, 5, 4});
  forms.push_back({"a 1x1 Conv with stride 2", one_layer("Conv", {1, 5, 6, 6}, random_tensor({4, 5, 1, 1}, 5),
                                                         {Attribute::make_ints("strides", {2, 2})}),
                   LoraLayout::kConv1x1, 5, 4});
  for (Form& f : forms) {
    INFO(f.what);
    Dims x_dims;
    for (const Dim& d : *f.model.graph.inputs[0].shape) x_dims.push_back(d.value);
    const std::map<std::string, Tensor> feeds{{"x", random_tensor(x_dims, 11)}};
    const Model base = f.model;
    const auto before = run_model(base, feeds);
    LoraPlan plan = plan_for({"*proj*"});
    auto changed = apply_lora(f.model, plan);
    INFO(changed.status().message());
    REQUIRE(changed.ok());
    CHECK(*changed);
    REQUIRE(plan.adapters.size() == 1);
    const LoraAdapter& ad = plan.adapters[0];
    CHECK(ad.weight == "layer.proj.weight");
    CHECK(ad.module == "layer.proj");
    CHECK(ad.layout == f.layout);
    CHECK(ad.in == f.in);
    CHECK(ad.out == f.out);
    Graph& g = f.model.graph;
    CHECK(g.initializers.at(ad.a).dims() == Dims{f.in, 2});
    CHECK(g.initializers.at(ad.b).dims() == Dims{2, f.out});
    // B starts at zero: the adapted model is the base model.
    require_close(run_model(f.model, feeds).at("y"), before.at("y"), 1e-6, 1e-6);
    // With B trained away from zero, the output is the merged weight's.
    g.initializers[ad.b] = random_tensor({2, f.out}, 12);
    const auto adapted = run_model(f.model, feeds).at("y");
    Model merged = base;
    Tensor& w = merged.graph.initializers.at("layer.proj.weight");
    Tensor delta = lora_delta(ad, g.initializers.at(ad.a), g.initializers.at(ad.b), plan.settings.scale());
    for (int64_t i = 0; i < w.numel(); ++i) delta.data<float>()[i] += w.data<float>()[i];
    w = delta;
    require_close(adapted, run_model(merged, feeds).at("y"), 1e-5, 1e-5);
    // And it is not the base output any more.
    double moved = 0;
    for (int64_t i = 0; i < adapted.numel(); ++i)
      moved = std::max(moved, std::abs(double(adapted.data<float>()[i]) - before.at("y").data<float>()[i]));
    CHECK(moved > 1e-3);
    // A second run adds nothing (the pass settles in one).
    const size_t nodes = g.nodes.size();
    CHECK_FALSE(*apply_lora(f.model, plan));
    CHECK(g.nodes.size() == nodes);
  }
}

TEST_CASE("lora_adapters: A is PEFT's kaiming-uniform init, drawn from the seed and the module name", "[passes][lora]") {
  const Tensor a = lora_a_init(256, 8, 7, "layers.0.q_proj");
  REQUIRE(a.dims() == Dims{256, 8});
  const double bound = 1 / std::sqrt(256.0);
  double lo = 1, hi = -1, sum = 0;
  for (float v : a.span<float>()) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v), sum += v;
  CHECK(lo >= -bound);
  CHECK(hi < bound);
  CHECK(lo < -0.95 * bound);  // 2048 draws reach both ends
  CHECK(hi > 0.95 * bound);
  CHECK(std::abs(sum / 2048) < 0.1 * bound);
  const Tensor same = lora_a_init(256, 8, 7, "layers.0.q_proj");
  const Tensor other_seed = lora_a_init(256, 8, 8, "layers.0.q_proj");
  const Tensor other_module = lora_a_init(256, 8, 7, "layers.0.v_proj");
  require_close(same, a, 0, 0);
  CHECK(other_seed.data<float>()[0] != a.data<float>()[0]);
  CHECK(other_module.data<float>()[0] != a.data<float>()[0]);
}

TEST_CASE("lora_adapters: a glob that matches no weight names the nearest, and a weight no adapter fits is refused",
          "[passes][lora]") {
  {
    Model m = one_layer("MatMul", {3, 5}, random_tensor({4, 5}, 1), {}, true);
    LoraPlan plan = plan_for({"*layer.prj*"});
    auto r = apply_lora(m, plan);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("lora.targets '*layer.prj*' matches no weight"));
    CHECK_THAT(r.status().message(), Catch::Contains("layer.proj.weight"));
    CHECK(m.graph.initializers.size() == 1);
  }
  {
    Model m = one_layer("Conv", {1, 5, 6, 6}, random_tensor({4, 5, 3, 3}, 1));
    LoraPlan plan = plan_for({"*proj*"});
    auto r = apply_lora(m, plan);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("'layer.proj.weight'"));
    CHECK_THAT(r.status().message(), Catch::Contains("only 1x1 ones are adapted"));
  }
  {
    // One weight read by two MatMuls (a tied weight): which layer gets the adapter is not the file's to say.
    Model m = one_layer("MatMul", {3, 5}, random_tensor({5, 5}, 1));
    m.graph.nodes.push_back(node("/other/MatMul", "MatMul", {"y", "layer.proj.weight"}, {"z"}));
    add_output(m.graph, "z");
    LoraPlan plan = plan_for({"layer.proj.weight"});
    auto r = apply_lora(m, plan);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("is read by 2 nodes"));
  }
  {
    // Two weights of one module (a TorchScript scope holding two MatMuls): PEFT's keys would collide.
    Model m = empty_model();
    add_input(m.graph, "x", DType::kFloat, {3, 5});
    add_initializer(m.graph, "onnx::MatMul_1", random_tensor({5, 5}, 1));
    add_initializer(m.graph, "onnx::MatMul_2", random_tensor({5, 5}, 2));
    m.graph.nodes.push_back(node("/attn/MatMul", "MatMul", {"x", "onnx::MatMul_1"}, {"h"}));
    m.graph.nodes.push_back(node("/attn/MatMul_1", "MatMul", {"h", "onnx::MatMul_2"}, {"y"}));
    add_output(m.graph, "y");
    LoraPlan plan = plan_for({"attn"});
    auto r = apply_lora(m, plan);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("both belong to module 'attn'"));
  }
  {
    // A bias matched by the same glob is no weight, and is left alone.
    Model m = one_layer("Gemm", {3, 5}, random_tensor({4, 5}, 1), {Attribute::make_int("transB", 1)});
    add_initializer(m.graph, "layer.proj.bias", random_tensor({4}, 2));
    m.graph.nodes[0].inputs.push_back("layer.proj.bias");
    LoraPlan plan = plan_for({"layer.proj*"});
    auto r = apply_lora(m, plan);
    INFO(r.status().message());
    REQUIRE(r.ok());
    REQUIRE(plan.adapters.size() == 1);
    CHECK(plan.adapters[0].weight == "layer.proj.weight");
  }
}

TEST_CASE("lora_adapters: a TorchScript export's nameless weight takes its module from the node's scope",
          "[passes][lora]") {
  Model m = empty_model();
  add_input(m.graph, "x", DType::kFloat, {3, 5});
  add_initializer(m.graph, "onnx::MatMul_419", random_tensor({5, 4}, 1));
  m.graph.nodes.push_back(
      node("/bert/encoder/layer.0/attention/self/query/MatMul", "MatMul", {"x", "onnx::MatMul_419"}, {"y"}));
  add_output(m.graph, "y");
  LoraPlan plan = plan_for({"*attention.self.query"});
  auto r = apply_lora(m, plan);
  INFO(r.status().message());
  REQUIRE(r.ok());
  REQUIRE(plan.adapters.size() == 1);
  CHECK(plan.adapters[0].module == "bert.encoder.layer.0.attention.self.query");
  CHECK(plan.adapters[0].a == "bert.encoder.layer.0.attention.self.query.lora_A");
}

}  // namespace ort_train::testing
