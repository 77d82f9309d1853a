// autocast (--precision bf16/fp16): which nodes it rewrites and how; the GEMM
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

TEST_CASE("autocast: a Gemm reads 16-bit casts of A, B and C, and its product is cast back", "[passes][autocast]") {
  for (DType low : {DType::kBFloat16, DType::kFloat16}) {
    NodeSpec spec{"Gemm", {random_tensor({4, 3}, 1), random_tensor({5, 3}, 2), random_tensor({5}, 3)},
                  {Attribute::make_int("transB", 1)}};
    Model m = single_node_model(spec);
    auto r = autocast(m, low);
    REQUIRE(r.ok());
    CHECK(r->low == low);
    CHECK(r->nodes == 1);
    CHECK(r->casts == 4);
    CHECK(ops(m) == std::vector<std::string>{"Cast", "Cast", "Cast", "Gemm", "Cast"});
    const Node& gemm = m.graph.nodes[3];
    REQUIRE(gemm.inputs.size() == 3);  // C stays in the GEMM, added before its one rounding (PyTorch's addmm)
    for (const std::string& in : gemm.inputs) CHECK(m.graph.value(in)->dtype == low);
    CHECK(m.graph.value(gemm.outputs[0])->dtype == low);
    CHECK(m.graph.nodes.back().outputs[0] == "out0");  // the graph's output keeps its name
  }
}

TEST_CASE("autocast: fp32 changes nothing, a Gemm scaling C and non-float32 GEMMs are left alone", "[passes][autocast]") {
  Model m = single_node_model({"MatMul", {random_tensor({2, 3}, 1), random_tensor({3, 4}, 2)}});
  REQUIRE(autocast(m, DType::kFloat).ok());
  CHECK(ops(m) == std::vector<std::string>{"MatMul"});
  REQUIRE_FALSE(autocast(m, DType::kDouble).ok());
  Model scaled = single_node_model({"Gemm", {random_tensor({4, 3}, 1), random_tensor({3, 5}, 2), random_tensor({5}, 3)},
                                    {Attribute::make_float("beta", 0.5f)}});
  auto kept = autocast(scaled, DType::kFloat16);
  REQUIRE(kept.ok());
  CHECK(kept->nodes == 0);
  CHECK(ops(scaled) == std::vector<std::string>{"Gemm"});
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
