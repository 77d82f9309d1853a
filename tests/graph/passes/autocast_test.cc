// autocast (--precision bf16): which nodes it rewrites and how; the GEMM
// FLOP count `inspect` reports per dtype.
#include "graph/gemm_flops.h"
#include "graph/passes/autocast.h"
#include "graph/shape_inference.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

std::vector<std::string> ops(const Model& m) {
  std::vector<std::string> out;
  for (const Node& n : m.graph.nodes) out.push_back(n.op_type);
  return out;
}

}  // namespace

TEST_CASE("autocast: a Gemm reads bfloat16 casts, its C is added in float32 after the cast back", "[passes][autocast]") {
  NodeSpec spec{"Gemm", {random_tensor({4, 3}, 1), random_tensor({5, 3}, 2), random_tensor({5}, 3)},
                {Attribute::make_int("transB", 1), Attribute::make_float("beta", 0.5f)}};
  Model m = single_node_model(spec);
  auto r = autocast(m, DType::kBFloat16);
  REQUIRE(r.ok());
  CHECK(r->nodes == 1);
  CHECK(r->casts == 3);
  CHECK(ops(m) == std::vector<std::string>{"Cast", "Cast", "Gemm", "Cast", "Mul", "Add"});
  const Node& gemm = m.graph.nodes[2];
  CHECK(gemm.inputs.size() == 2);  // C left the GEMM
  CHECK(gemm.attr("beta") == nullptr);
  CHECK(m.graph.value(gemm.outputs[0])->dtype == DType::kBFloat16);
  CHECK(m.graph.nodes.back().outputs[0] == "out0");  // the graph's output keeps its name
}

TEST_CASE("autocast: fp32 changes nothing, fp16 is refused, non-float32 GEMMs are left alone", "[passes][autocast]") {
  Model m = single_node_model({"MatMul", {random_tensor({2, 3}, 1), random_tensor({3, 4}, 2)}});
  REQUIRE(autocast(m, DType::kFloat).ok());
  CHECK(ops(m) == std::vector<std::string>{"MatMul"});
  auto fp16 = autocast(m, DType::kFloat16);
  REQUIRE_FALSE(fp16.ok());
  CHECK(fp16.status().code() == ErrorCode::kUnsupported);
  Model ints = single_node_model({"MatMul", {make<int64_t>({1, 2}, {1, 2}), make<int64_t>({2, 1}, {3, 4})}});
  auto r = autocast(ints, DType::kBFloat16);
  REQUIRE(r.ok());
  CHECK(r->nodes == 0);
  CHECK(ops(ints) == std::vector<std::string>{"MatMul"});
}

TEST_CASE("GEMM FLOPs by dtype: a MatMul's 2*M*N*K, in bfloat16 after autocast", "[passes][autocast]") {
  Model m = single_node_model({"MatMul", {random_tensor({5, 2, 3}, 1), random_tensor({3, 4}, 2)}});
  REQUIRE(infer_shapes(m).ok());
  GemmFlops before = count_gemm_flops(m.graph);
  CHECK(before.total() == 2.0 * 10 * 4 * 3);
  CHECK(before.fraction(DType::kFloat) == 1.0);
  REQUIRE(autocast(m, DType::kBFloat16).ok());
  REQUIRE(infer_shapes(m).ok());
  GemmFlops after = count_gemm_flops(m.graph);
  CHECK(after.total() == before.total());
  CHECK(after.fraction(DType::kBFloat16) == 1.0);
  CHECK(after.unknown.empty());
}
