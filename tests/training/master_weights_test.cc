// Training with float16 parameters: the graph reads the 16-bit weights, the
// gradients arrive in float16 and are summed in float32, and the optimizer
// updates float32 master weights that the 16-bit ones are rounded from
// (issue 10 item 5: a dtype-aware loop, before any fp16 kernel but Cast).
#include "autodiff/training_graph.h"
#include "test_util.h"
#include "training/trainer.h"

namespace ort_train::testing {
namespace {

// logits = x @ Cast(W, float) + b with W float16 (or x @ W + b with W float32, the reference).
Model linear_model(bool half_weight) {
  Model m;
  m.ir_version = 8;
  m.opset_imports.push_back({"", 17});
  Graph& g = m.graph;
  g.name = "linear";
  g.inputs.push_back(ValueInfo{"x", DType::kFloat, shape_from_dims({4, 3}), ""});
  Tensor w32 = random_tensor({3, 2}, 11);
  Tensor w16 = Tensor::host(DType::kFloat16, {3, 2});
  for (int64_t i = 0; i < 6; ++i) {
    w16.data<Float16>()[i] = Float16(w32.data<float>()[i]);
    w32.data<float>()[i] = static_cast<float>(w16.data<Float16>()[i]);  // the same values in both models
  }
  auto add_init = [&](const std::string& name, const Tensor& t) {
    g.initializers[name] = t;
    g.initializer_order.push_back(name);
  };
  add_init("W", half_weight ? w16 : w32);
  add_init("b", make<float>({2}, {0.1f, -0.2f}));
  std::string w = "W";
  if (half_weight) {
    g.nodes.push_back(Node{"cast_w", "Cast", "", {"W"}, {"W_float"}, {Attribute::make_int("to", 1)}, ""});
    w = "W_float";
  }
  g.nodes.push_back(Node{"matmul", "MatMul", "", {"x", w}, {"mm"}, {}, ""});
  g.nodes.push_back(Node{"add", "Add", "", {"mm", "b"}, {"logits"}, {}, ""});
  g.outputs.push_back(ValueInfo{"logits", DType::kFloat, shape_from_dims({4, 2}), ""});
  return m;
}

std::unique_ptr<Trainer> make_trainer(bool half_weight, double lr, int64_t accum) {
  auto desc = parse_description(R"(
inputs: [{name: x, dtype: float32, shape: [4, 3]}]
labels: [{name: labels, dtype: float32, shape: [4, 2]}]
loss: {type: mse, input: logits, target: labels}
)", "");
  REQUIRE(desc.ok());
  auto tg = build_training_graph(linear_model(half_weight), *desc);
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  std::map<std::string, Tensor> batch{{"x", random_tensor({4, 3}, 21)}, {"labels", random_tensor({4, 2}, 22)}};
  BatchSource source{[batch](int64_t) -> Result<std::map<std::string, Tensor>> { return batch; }, 1};
  TrainerOptions options;
  options.optimizer.name = "Sgd";
  options.optimizer.lr = lr;
  options.steps = 10;
  options.grad_accum = accum;
  auto trainer = Trainer::create(std::move(tg).value(), options, source);
  INFO(trainer.status().message());
  REQUIRE(trainer.ok());
  return std::move(trainer).value();
}

std::vector<float> values(const Tensor& t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<float>(float_element(t.dtype(), t.raw(), i)));
  return v;
}

}  // namespace

TEST_CASE("float16 parameters train through float32 master weights", "[training][float16]") {
  auto half = make_trainer(true, 0.1, 1);
  auto full = make_trainer(false, 0.1, 1);
  const ParameterStore& store = half->parameters();
  REQUIRE(store.groups().size() == 2);  // float16 (W) and float32 (b)
  const ParameterStore::Entry* w = store.find("W");
  REQUIRE(w);
  CHECK(w->param.dtype() == DType::kFloat16);
  CHECK(w->grad.dtype() == DType::kFloat16);  // the graph's gradient, in the parameter's dtype
  CHECK(w->master.dtype() == DType::kFloat);
  CHECK(w->master_grad.dtype() == DType::kFloat);
  CHECK(store.find("b")->master.raw() == store.find("b")->param.raw());  // float32: its own master

  for (int step = 0; step < 5; ++step) {
    auto h = half->step();
    auto f = full->step();
    INFO(h.status().message());
    REQUIRE(h.ok());
    REQUIRE(f.ok());
    INFO("step " << step);
    if (step == 0) CHECK(h->loss == f->loss);  // identical weights, all float32 arithmetic
    else CHECK(h->loss == Approx(f->loss).epsilon(1e-3));
    // The 16-bit gradient differs from the float32 one only by its rounding.
    CHECK(*h->grad_norm == Approx(*f->grad_norm).epsilon(1e-3));
  }
  std::vector<float> master = values(w->master), param = values(w->param);
  std::vector<float> reference = values(full->parameters().find("W")->param);
  for (size_t i = 0; i < master.size(); ++i) {
    INFO("element " << i);
    CHECK(master[i] == Approx(reference[i]).epsilon(2e-3));
    CHECK(param[i] == static_cast<float>(Float16(master[i])));  // the graph reads the master, rounded
  }
}

TEST_CASE("float32 masters keep updates smaller than a float16 step", "[training][float16]") {
  auto half = make_trainer(true, 1e-6, 1);
  const ParameterStore::Entry* w = half->parameters().find("W");
  std::vector<float> before = values(w->param);
  REQUIRE(half->step().ok());
  std::vector<float> master = values(w->master), param = values(w->param);
  int kept_only_in_master = 0;
  for (size_t i = 0; i < before.size(); ++i) kept_only_in_master += param[i] == before[i] && master[i] != before[i];
  CHECK(kept_only_in_master > 0);  // a float16-only update would have lost these
}

TEST_CASE("float16 gradients accumulate over micro-batches in float32", "[training][float16]") {
  // Two identical micro-batches average to the one-batch gradient exactly.
  auto one = make_trainer(true, 0.1, 1);
  auto two = make_trainer(true, 0.1, 2);
  auto a = one->step();
  auto b = two->step();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->loss == b->loss);
  CHECK(*a->grad_norm == *b->grad_norm);
  CHECK(values(one->parameters().find("W")->master) == values(two->parameters().find("W")->master));
  // A checkpoint carries the master, so a resumed run continues from it and not from its rounding.
  auto snap = two->snapshot({});
  REQUIRE(snap.ok());
  bool has_master = false;
  for (const auto& [name, t] : snap->tensors) has_master = has_master || (name == "master/W" && t.dtype() == DType::kFloat);
  CHECK(has_master);
  auto fresh = make_trainer(true, 0.1, 2);
  REQUIRE(fresh->restore(CheckpointReader::of(*snap), {}).ok());
  CHECK(values(fresh->parameters().find("W")->master) == values(two->parameters().find("W")->master));
}

}  // namespace ort_train::testing
