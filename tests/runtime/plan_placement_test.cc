// Plan-time placement (runtime/plan_placement.h): where a GPU plan runs each
// step and which copies it puts before it, decided from the graph alone. No
// GPU is needed: the plan is the CPU's with each step given the kernels a GPU
// plan would have (a device kernel, and a host one for integer outputs).
#include <algorithm>

#include "runtime/plan_placement.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

// x [n, 3, 4] float, ids [2, 3] int64:
//   s = Shape(x); d = Gather(s, first); t = Concat(d, minus_one); y = Reshape(x, t)
//   yi = Cast(y, int64); nz = NonZero(yi); m = Identity(nz) (as if no device kernel)
//   k = Add(ids, one)
Model shape_arithmetic_model() {
  Model m;
  m.opset_imports = {{"", 17}};
  Graph& g = m.graph;
  g.inputs.push_back({"x", DType::kFloat, Shape{Dim("n"), Dim(3), Dim(4)}, ""});
  g.inputs.push_back({"ids", DType::kInt64, Shape{Dim(2), Dim(3)}, ""});
  g.initializers["first"] = make<int64_t>({1}, {0});
  g.initializers["minus_one"] = make<int64_t>({1}, {-1});
  g.initializers["one"] = make<int64_t>({}, {1});
  g.nodes.push_back({"shape", "Shape", "", {"x"}, {"s"}, {}, ""});
  g.nodes.push_back({"gather", "Gather", "", {"s", "first"}, {"d"}, {}, ""});
  g.nodes.push_back({"concat", "Concat", "", {"d", "minus_one"}, {"t"}, {Attribute::make_int("axis", 0)}, ""});
  g.nodes.push_back({"reshape", "Reshape", "", {"x", "t"}, {"y"}, {}, ""});
  g.nodes.push_back({"cast", "Cast", "", {"y"}, {"yi"}, {Attribute::make_int("to", 7)}, ""});
  g.nodes.push_back({"nonzero", "NonZero", "", {"yi"}, {"nz"}, {}, ""});
  g.nodes.push_back({"host_only", "Identity", "", {"nz"}, {"m"}, {}, ""});
  g.nodes.push_back({"add", "Add", "", {"ids", "one"}, {"k"}, {}, ""});
  g.outputs.push_back({"y", DType::kFloat, std::nullopt, ""});
  g.outputs.push_back({"m", DType::kInt64, std::nullopt, ""});
  g.outputs.push_back({"k", DType::kInt64, std::nullopt, ""});
  return m;
}

struct GpuLikePlan {
  Model model;
  ExecutionPlan plan;
  size_t index(const std::string& node) const {
    for (size_t i = 0; i < plan.steps.size(); ++i)
      if (plan.steps[i].node->name == node) return i;
    FAIL("no step " << node);
    return 0;
  }
  const PlanStep& step(const std::string& node) const { return plan.steps[index(node)]; }
  const StepCopies& copies(const std::string& node) const { return plan.copies.at(index(node)); }
  std::vector<std::string> names(const std::vector<int>& slots) const {
    std::vector<std::string> out;
    for (int s : slots) out.push_back(plan.slot_names[s]);
    return out;
  }
};

// The CPU plan of the model with a GPU plan's kernels: every step a device
// kernel (its CPU one stands in) except `host_only`, and a host kernel for
// each step whose outputs are integers.
void make_gpu_like(GpuLikePlan& p) {
  REQUIRE(infer_shapes(p.model, ShapeInferenceOptions{{}, nullptr}).ok());
  auto plan = build_execution_plan(p.model, DeviceKind::kCpu);
  REQUIRE(plan.ok());
  p.plan = std::move(*plan);
  for (PlanStep& s : p.plan.steps) {
    bool integer = true;
    for (const std::string& o : s.node->outputs) integer = integer && is_integer_or_bool(p.model.graph.value(o)->dtype);
    s.host_kernel = integer ? s.kernel : nullptr;
    if (s.node->name == "host_only") s.kernel = nullptr;
  }
}

std::vector<bool> host_copies_of(const GpuLikePlan& p, std::vector<std::string> names) {
  std::vector<bool> host(p.plan.slot_names.size(), false);
  for (const std::string& n : names) host[p.plan.slots.at(n)] = true;
  return host;
}

}  // namespace

TEST_CASE("plan placement: shape arithmetic on the host, its results uploaded once, device data fetched for a rule",
          "[executor][placement]") {
  GpuLikePlan p{shape_arithmetic_model(), {}};
  make_gpu_like(p);
  place_steps(p.plan, p.model.graph, host_copies_of(p, {"first", "minus_one", "one"}));
  using V = std::vector<std::string>;
  // Shape is its rule's answer; Gather and Concat of small host integers run on the host.
  CHECK(p.step("shape").place == StepPlace::kRule);
  CHECK(p.copies("shape").fetch.empty());  // a shape needs no data
  CHECK(p.step("gather").place == StepPlace::kHost);
  CHECK(p.step("concat").place == StepPlace::kHost);
  CHECK(p.copies("gather").fetch.empty());
  // Reshape runs on the device; its rule reads t's host copy, its kernel the uploaded one.
  CHECK(p.step("reshape").place == StepPlace::kDevice);
  CHECK(p.copies("reshape").fetch.empty());
  CHECK(p.names(p.copies("reshape").upload) == V{"t"});
  // An integer result of device data stays on the device.
  CHECK(p.step("cast").place == StepPlace::kDevice);
  // NonZero's shape is its input's data: the plan copies that to the host right before it.
  CHECK(p.step("nonzero").place == StepPlace::kDevice);
  CHECK(p.names(p.copies("nonzero").fetch) == V{"yi"});
  // No device kernel: the host runs it, on a copy of its device input.
  CHECK(p.step("host_only").place == StepPlace::kHost);
  CHECK(p.names(p.copies("host_only").fetch) == V{"nz"});
  // A feed is a device value (the trainer stages batches there); initializers have device copies.
  CHECK(p.step("add").place == StepPlace::kDevice);
  CHECK(p.copies("add").upload.empty());
  CHECK(p.copies("add").fetch.empty());
}

TEST_CASE("plan placement: an initializer without a host copy moves its readers to the device",
          "[executor][placement]") {
  GpuLikePlan p{shape_arithmetic_model(), {}};
  make_gpu_like(p);
  // `first` is being updated (Executor::forget_host_copies): its host copy is gone.
  place_steps(p.plan, p.model.graph, host_copies_of(p, {"minus_one", "one"}));
  CHECK(p.step("gather").place == StepPlace::kDevice);
  CHECK(p.names(p.copies("gather").upload) == std::vector<std::string>{"s"});  // the rule's host value
  CHECK(p.step("concat").place == StepPlace::kDevice);
  // Reshape's target now lives on the device: fetched for the rule, nothing uploaded.
  CHECK(p.names(p.copies("reshape").fetch) == std::vector<std::string>{"t"});
  CHECK(p.copies("reshape").upload.empty());
}

TEST_CASE("plan placement: host steps only for outputs whose inferred size is small and known",
          "[executor][placement]") {
  // e = Expand(one, Shape(x)): integers from host values, but x's dims are
  // symbolic, so its size is unknown before the run: the device makes it.
  Model m;
  m.opset_imports = {{"", 17}};
  Graph& g = m.graph;
  g.inputs.push_back({"x", DType::kFloat, Shape{Dim("n"), Dim("n")}, ""});
  g.initializers["one"] = make<int64_t>({}, {1});
  g.nodes.push_back({"shape", "Shape", "", {"x"}, {"s"}, {}, ""});
  g.nodes.push_back({"expand", "Expand", "", {"one", "s"}, {"e"}, {}, ""});
  g.outputs.push_back({"e", DType::kInt64, std::nullopt, ""});
  GpuLikePlan p{std::move(m), {}};
  make_gpu_like(p);
  place_steps(p.plan, p.model.graph, host_copies_of(p, {"one"}));
  CHECK(p.step("expand").place == StepPlace::kDevice);
  CHECK(p.names(p.copies("expand").upload) == std::vector<std::string>{"s"});
  // Bound to 8 x 8 = 64 elements, the same step fits on the host.
  GpuLikePlan q{p.model, {}};
  for (ValueInfo& v : q.model.graph.inputs) v.shape = Shape{Dim(8), Dim(8)};
  q.model.graph.values.clear();
  make_gpu_like(q);
  place_steps(q.plan, q.model.graph, host_copies_of(q, {"one"}));
  CHECK(q.step("expand").place == StepPlace::kHost);
  CHECK(q.copies("expand").upload.empty());
}

TEST_CASE("a shape rule reads only the inputs its op declares, a CPU plan runs every step on its device",
          "[executor][placement]") {
  for (const OpSchema* s : OpRegistry::instance().all()) {
    INFO((s->domain.empty() ? "ai.onnx" : s->domain) << " " << s->op_type);
    // Shape, Size and Constant compute their values and read no data.
    if (s->traits & kValueFromRule) CHECK(rule_data_inputs(s->traits) == 0);
  }
  const OpSchema* reshape = OpRegistry::instance().find("", "Reshape", 17);
  REQUIRE(reshape);
  CHECK(rule_data_inputs(reshape->traits) == 0b10);
  // The executor refuses a rule that reads an input its op did not declare
  // (every run does, so the whole suite checks the declarations).
  Model m = shape_arithmetic_model();
  auto ex = Executor::create(m);
  REQUIRE(ex.ok());
  for (const PlanStep& step : (*ex)->plan().steps) CHECK(step.place == StepPlace::kDevice);
  CHECK((*ex)->plan().copies.empty());
  auto out = (*ex)->run({{"x", random_tensor({2, 3, 4}, 1)}, {"ids", make<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6})}});
  INFO(out.status().message());
  REQUIRE(out.ok());
  CHECK(out->at("y").dims() == Dims{2, 12});
}
