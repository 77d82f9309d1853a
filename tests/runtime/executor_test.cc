// The executor's plan: release after last use, buffer reuse, peak memory, feed checks.
#include <cstring>

#include "test_util.h"
#include "training/batch_source.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// x -> Add(x, one) -> Add(.., one) -> ... (n nodes), every intermediate the same size.
Model chain_model(int n, int64_t size) {
  Model m;
  m.opset_imports = {{"", 17}};
  Graph& g = m.graph;
  g.inputs.push_back({"x", DType::kFloat, Shape{Dim(size)}, ""});
  g.initializers["one"] = make<float>({1}, {1});
  std::string prev = "x";
  for (int i = 0; i < n; ++i) {
    std::string out = i + 1 == n ? "y" : "v" + std::to_string(i);
    g.nodes.push_back({"add" + std::to_string(i), "Add", "", {prev, "one"}, {out}, {}, ""});
    prev = out;
  }
  g.outputs.push_back({"y", DType::kFloat, std::nullopt, ""});
  return m;
}

}  // namespace

TEST_CASE("a chain of elementwise ops runs in place in one buffer", "[executor]") {
  const int64_t size = 1 << 16;  // 256 KiB per value
  Model m = chain_model(20, size);
  REQUIRE(infer_shapes(m).ok());
  auto ex = Executor::create(m);
  REQUIRE(ex.ok());
  (*ex)->use_replay_arena(true);  // the GPU's default, checked here on the CPU
  auto out = (*ex)->run({{"x", Tensor::host(DType::kFloat, {size})}});
  REQUIRE(out.ok());
  REQUIRE(out->at("y").data<float>()[size - 1] == 20.0f);
  const size_t value_bytes = allocator_bin_size(size * sizeof(float));
  // The first Add allocates (its input is the caller's feed); every later Add
  // writes over its dying input.
  REQUIRE((*ex)->allocator().peak_bytes() == value_bytes);
  REQUIRE((*ex)->allocator().system_allocations() == 1);

  // The second run replays the plan: the recording's block goes back to the
  // system and the replay arena (one value here) is taken once; later runs
  // allocate nothing once the caller drops the previous result.
  out = Result<std::map<std::string, Tensor>>(std::map<std::string, Tensor>{});
  auto again = (*ex)->run({{"x", Tensor::host(DType::kFloat, {size})}});
  REQUIRE(again.ok());
  CHECK((*ex)->arena_outputs() == 1);
  CHECK((*ex)->arena_bytes() == size * sizeof(float));
  REQUIRE((*ex)->allocator().system_allocations() == 2);
  again = Result<std::map<std::string, Tensor>>(std::map<std::string, Tensor>{});
  auto third = (*ex)->run({{"x", Tensor::host(DType::kFloat, {size})}});
  REQUIRE(third.ok());
  REQUIRE(third->at("y").data<float>()[size - 1] == 20.0f);
  REQUIRE((*ex)->allocator().system_allocations() == 2);
  REQUIRE((*ex)->allocator().peak_bytes() == value_bytes);

  // The static estimate is an upper bound: it counts the fed input and ignores in-place reuse.
  MemoryEstimate est = estimate_memory(m);
  REQUIRE(est.complete);
  REQUIRE(est.peak_activation_bytes == 3 * value_bytes);
}

TEST_CASE("the plan releases each intermediate after its last reader", "[executor]") {
  Model m = chain_model(3, 4);
  REQUIRE(infer_shapes(m).ok());
  auto ex = Executor::create(m);
  REQUIRE(ex.ok());
  const ExecutionPlan& plan = (*ex)->plan();
  REQUIRE(plan.steps.size() == 3);
  REQUIRE(plan.steps[0].release.empty());  // x is a feed, owned by the caller
  REQUIRE(plan.steps[1].release.size() == 1);
  REQUIRE(plan.slot_names[plan.steps[1].release[0]] == "v0");
  REQUIRE(plan.steps[2].release.size() == 1);
  REQUIRE(plan.slot_names[plan.steps[2].release[0]] == "v1");
}

TEST_CASE("fetching an intermediate keeps it alive", "[executor]") {
  Model m = chain_model(3, 4);
  REQUIRE(infer_shapes(m).ok());
  auto ex = Executor::create(m);
  auto out = (*ex)->run({{"x", make<float>({4}, {0, 1, 2, 3})}}, {}, {"v0", "y"});
  REQUIRE(out.ok());
  require_close(out->at("v0"), make<float>({4}, {1, 2, 3, 4}));
  require_close(out->at("y"), make<float>({4}, {3, 4, 5, 6}));
}

TEST_CASE("feeds are checked: missing, wrong dtype, wrong shape, unknown name", "[executor][errors]") {
  Model m = chain_model(2, 4);
  REQUIRE(infer_shapes(m).ok());
  auto ex = Executor::create(m);
  auto missing = (*ex)->run({});
  REQUIRE_THAT(missing.status().message(), Catch::Contains("missing input 'x'"));
  auto dtype = (*ex)->run({{"x", make<int64_t>({4}, {1, 2, 3, 4})}});
  REQUIRE_THAT(dtype.status().message(), Catch::Contains("expected dtype float32, got int64"));
  auto shape = (*ex)->run({{"x", make<float>({5}, {1, 2, 3, 4, 5})}});
  REQUIRE(shape.status().code() == ErrorCode::kShape);
  REQUIRE_THAT(shape.status().message(), Catch::Contains("expected shape [4], got [5]"));
  auto extra = (*ex)->run({{"x", make<float>({4}, {1, 2, 3, 4})}, {"z", make<float>({1}, {1})}});
  REQUIRE_THAT(extra.status().message(), Catch::Contains("'z' is not an input"));
}

TEST_CASE("symbolic dims must agree across feeds", "[executor][errors]") {
  Model m;
  m.opset_imports = {{"", 17}};
  m.graph.inputs.push_back({"a", DType::kFloat, Shape{Dim("batch"), Dim(2)}, ""});
  m.graph.inputs.push_back({"b", DType::kFloat, Shape{Dim("batch"), Dim(2)}, ""});
  m.graph.nodes.push_back({"add", "Add", "", {"a", "b"}, {"y"}, {}, ""});
  m.graph.outputs.push_back({"y", DType::kFloat, std::nullopt, ""});
  REQUIRE(infer_shapes(m).ok());
  REQUIRE(shape_to_string(m.graph.value("y")->shape) == "[batch,2]");
  auto ex = Executor::create(m);
  auto r = (*ex)->run({{"a", Tensor::host(DType::kFloat, {3, 2})}, {"b", Tensor::host(DType::kFloat, {4, 2})}});
  REQUIRE_THAT(r.status().message(), Catch::Contains("input 'b'"));
}

TEST_CASE("every unsupported op is listed with node name and opset before anything runs", "[executor][errors]") {
  Model m;
  m.opset_imports = {{"", 17}, {"com.example", 1}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim(2)}, ""});
  m.graph.nodes.push_back({"first_bad", "NoSuchOp", "", {"x"}, {"a"}, {}, ""});
  m.graph.nodes.push_back({"fine", "Add", "", {"a", "x"}, {"b"}, {}, ""});
  m.graph.nodes.push_back({"second_bad", "Custom", "com.example", {"b"}, {"y"}, {}, ""});
  m.graph.outputs.push_back({"y", DType::kFloat, std::nullopt, ""});
  Status st = infer_shapes(m);
  REQUIRE(st.code() == ErrorCode::kUnsupported);
  REQUIRE_THAT(st.message(), Catch::Contains("2 node(s)"));
  REQUIRE_THAT(st.message(), Catch::Contains("first_bad (NoSuchOp opset 17)"));
  REQUIRE_THAT(st.message(), Catch::Contains("second_bad (Custom opset 1, domain com.example)"));
}

TEST_CASE("an input still needed later, or fetched, is never overwritten in place", "[executor]") {
  // y = (x + 1) + (x + 1) read twice: the first sum must survive the second Add.
  Model m;
  m.opset_imports = {{"", 17}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim(3)}, ""});
  m.graph.initializers["one"] = make<float>({1}, {1});
  m.graph.nodes.push_back({"a", "Add", "", {"x", "one"}, {"s"}, {}, ""});
  m.graph.nodes.push_back({"b", "Relu", "", {"s"}, {"r"}, {}, ""});
  m.graph.nodes.push_back({"c", "Add", "", {"s", "r"}, {"y"}, {}, ""});
  m.graph.outputs.push_back({"y", DType::kFloat, std::nullopt, ""});
  REQUIRE(infer_shapes(m).ok());
  auto ex = Executor::create(m);
  auto out = (*ex)->run({{"x", make<float>({3}, {-3, 0, 2})}}, {}, {"s", "y"});
  REQUIRE(out.ok());
  require_close(out->at("s"), make<float>({3}, {-2, 1, 3}));
  require_close(out->at("y"), make<float>({3}, {-2, 2, 6}));
}

TEST_CASE("release_outputs frees each output the caller took after its last reader, and keeps the fetched",
          "[executor]") {
  // s is an output Relu and the last Add still read after it is final; r is an output nothing reads.
  Model m;
  m.opset_imports = {{"", 17}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim(3)}, ""});
  m.graph.initializers["one"] = make<float>({1}, {1});
  m.graph.nodes.push_back({"a", "Add", "", {"x", "one"}, {"s"}, {}, ""});
  m.graph.nodes.push_back({"b", "Relu", "", {"s"}, {"r"}, {}, ""});
  m.graph.nodes.push_back({"c", "Add", "", {"s", "s"}, {"y"}, {}, ""});
  for (const char* o : {"s", "r", "y"}) m.graph.outputs.push_back({o, DType::kFloat, std::nullopt, ""});
  REQUIRE(infer_shapes(m).ok());
  auto ex = Executor::create(m);
  REQUIRE(ex.ok());
  const ExecutionPlan& plan = (*ex)->plan();
  REQUIRE(plan.steps.size() == 3);
  CHECK(plan.steps[2].outputs_done.size() == 2);  // s (read last by c) and y
  CHECK(plan.steps[1].outputs_done.size() == 1);  // r
  RunOptions run;
  std::map<std::string, std::vector<float>> taken;
  run.on_output_ready = [&](const std::string& name, const Tensor& t) {
    taken[name].assign(t.data<float>(), t.data<float>() + t.numel());
    return Status::Ok();
  };
  run.release_outputs = true;
  auto out = (*ex)->run({{"x", make<float>({3}, {-3, 0, 2})}}, run, {"y"});
  REQUIRE(out.ok());
  CHECK(out->size() == 1);
  require_close(out->at("y"), make<float>({3}, {-4, 2, 6}));
  CHECK(taken.at("s") == std::vector<float>{-2, 1, 3});
  CHECK(taken.at("r") == std::vector<float>{0, 1, 3});
}

// A variadic op whose output takes over a dying input other than the first must
// still read that input before overwriting it (the fold starts with it).
TEST_CASE("executor.variadic_sum_reusing_a_later_input") {
  using namespace ort_train;
  using namespace ort_train::testing;
  Model m;
  m.opset_imports.push_back({"", 17});
  Graph& g = m.graph;
  for (const char* n : {"x", "y", "z"}) g.inputs.push_back(ValueInfo{n, DType::kFloat, Shape{3}, ""});
  g.nodes.push_back(Node{"neg", "Neg", "", {"z"}, {"nz"}, {}, ""});
  g.nodes.push_back(Node{"sum", "Sum", "", {"x", "y", "nz"}, {"s"}, {}, ""});
  g.outputs.push_back(ValueInfo{"s", DType::kUndefined, std::nullopt, ""});
  REQUIRE(infer_shapes(m).ok());
  auto ex = Executor::create(m);
  REQUIRE(ex.ok());
  auto out = (*ex)->run({{"x", make<float>({3}, {1, 2, 3})}, {"y", make<float>({3}, {10, 20, 30})},
                         {"z", make<float>({3}, {100, 200, 300})}});
  REQUIRE(out.ok());
  require_close(out->at("s"), make<float>({3}, {-89, -178, -267}));
}

// Plan replay (Executor::Replay): with the feed shapes of the last run, each
// step whose shape rule's answer cannot change replays it.

TEST_CASE("a run with the recorded feed shapes replays every rule of a model whose shapes follow its feeds",
          "[executor][replay]") {
  ModelDescription desc;
  TrainingGraph tg = bundled_training_graph("bert", &desc);
  auto ex = Executor::create(tg.model);
  REQUIRE(ex.ok());
  (*ex)->use_replay_arena(true);  // the GPU's default, checked here on the CPU
  auto source = make_batch_source(source_dir() + "/tests/models/bert/train_batches", tg, desc, 0);
  REQUIRE(source.ok());
  auto batch = (*source)(0);
  REQUIRE(batch.ok());
  const std::map<std::string, Tensor>& feeds = *batch;
  RunOptions run;
  run.training = true;
  auto first = (*ex)->run(feeds, run);
  INFO(first.status().message());
  REQUIRE(first.ok());
  CHECK((*ex)->replayed_steps() == 0);
  std::map<std::string, Tensor> kept;
  for (const auto& [name, t] : *first) kept[name] = t.clone();
  auto second = (*ex)->run(feeds, run);
  REQUIRE(second.ok());
  const int64_t steps = static_cast<int64_t>((*ex)->plan().steps.size());
  INFO((*ex)->replayed_steps() << " of " << steps << " steps replayed");
  CHECK((*ex)->replayed_steps() == steps);  // the exported shape arithmetic reads only shapes and constants
  CHECK((*ex)->recordings() == 1);
  INFO((*ex)->arena_outputs() << " outputs in a " << (*ex)->arena_bytes() << "-byte arena");
  CHECK((*ex)->arena_outputs() > 100);
  for (const auto& [name, t] : *second) {
    INFO(name);
    REQUIRE(t.nbytes() == kept[name].nbytes());
    CHECK(std::memcmp(t.raw(), kept[name].raw(), t.nbytes()) == 0);
  }
}

TEST_CASE("a rule that reads computed data runs again on every run, new feed shapes record again",
          "[executor][replay]") {
  // r = Range(0, Cast(ReduceMax(x), int64), 1): its length follows x's values, not x's shape.
  Model m;
  m.opset_imports = {{"", 17}};
  Graph& g = m.graph;
  g.inputs.push_back({"x", DType::kFloat, Shape{Dim("n")}, ""});
  g.initializers["zero"] = make<int64_t>({}, {0});
  g.initializers["one"] = make<int64_t>({}, {1});
  g.nodes.push_back({"max", "ReduceMax", "", {"x"}, {"m"}, {Attribute::make_int("keepdims", 0)}, ""});
  g.nodes.push_back({"cast", "Cast", "", {"m"}, {"k"}, {Attribute::make_int("to", 7)}, ""});
  g.nodes.push_back({"range", "Range", "", {"zero", "k", "one"}, {"r"}, {}, ""});
  g.nodes.push_back({"shape", "Shape", "", {"x"}, {"s"}, {}, ""});
  g.outputs.push_back({"r", DType::kInt64, std::nullopt, ""});
  g.outputs.push_back({"s", DType::kInt64, std::nullopt, ""});
  auto ex = Executor::create(m);
  REQUIRE(ex.ok());
  auto a = (*ex)->run({{"x", make<float>({3}, {1, 3, 2})}});
  REQUIRE(a.ok());
  CHECK(a->at("r").numel() == 3);
  auto b = (*ex)->run({{"x", make<float>({3}, {5, 0, 1})}});
  REQUIRE(b.ok());
  CHECK(b->at("r").numel() == 5);  // not the recorded 3
  CHECK((*ex)->replayed_steps() == 3);  // ReduceMax, Cast, Shape; Range ran its rule
  auto c = (*ex)->run({{"x", make<float>({4}, {2, 0, 1, 1})}});
  REQUIRE(c.ok());
  CHECK((*ex)->recordings() == 2);
  CHECK(c->at("r").numel() == 2);
  CHECK(c->at("s").to_int64_vector() == std::vector<int64_t>{4});
}

TEST_CASE("replay arena: values a caller still holds are never overwritten by the next run", "[executor][replay]") {
  // y = ((x + 1) + 1) ...: every intermediate dies at once, so they share the arena's bytes.
  const int64_t size = 1024;
  Model m = chain_model(6, size);
  REQUIRE(infer_shapes(m).ok());
  auto ex = Executor::create(m);
  REQUIRE(ex.ok());
  (*ex)->use_replay_arena(true);
  auto x = [&](float v) {
    Tensor t = Tensor::host(DType::kFloat, {size});
    for (int64_t i = 0; i < size; ++i) t.data<float>()[i] = v;
    return t;
  };
  REQUIRE((*ex)->run({{"x", x(0)}}).ok());  // records
  auto a = (*ex)->run({{"x", x(100)}});      // replays into the arena
  REQUIRE(a.ok());
  auto b = (*ex)->run({{"x", x(200)}});      // a still holds its y: b must not reuse a's bytes
  REQUIRE(b.ok());
  CHECK(a->at("y").data<float>()[7] == 106.f);
  CHECK(b->at("y").data<float>()[7] == 206.f);
  CHECK(a->at("y").raw() != b->at("y").raw());
}
