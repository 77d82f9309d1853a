// matmul_scale_fusion and matmul_transpose_fusion on attention's
// (q @ k^T) / c: the scale becomes the GEMM's alpha when c is a power of two,
// a Transpose of the last two dims becomes transA/transB, together one
// FusedMatMul computing the same values; other scales, other permutations and
// intermediates needed elsewhere leave the nodes alone.
#include <cmath>

#include "graph/op_schema.h"
#include "graph/passes/pass_test_util.h"
#include "graph/shape_inference.h"
#include "runtime/cpu/gemm_backend.h"
#include "runtime/kernel_choice.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

struct Attention {
  std::vector<int64_t> perm = {0, 1, 3, 2};
  Dims k_dims = {2, 3, 4, 8};
  float divisor = 4.f;
  bool scale_is_mul = false;    // s * (1 / divisor), the constant first
  bool transposed_is_output = false;
};

// y = (q @ Transpose(k, perm)) / divisor over [2, 3, 4, 8] q and k.
Model attention(const Attention& a) {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "q", DType::kFloat, {2, 3, 4, 8});
  add_input(g, "k", DType::kFloat, a.k_dims);
  g.nodes.push_back(node("attn/Transpose", "Transpose", {"k"}, {"kt"}, {Attribute::make_ints("perm", a.perm)}));
  g.nodes.push_back(node("attn/MatMul", "MatMul", {"q", "kt"}, {"s"}));
  if (a.scale_is_mul) {
    add_initializer(g, "c", make<float>({}, {1.f / a.divisor}));
    g.nodes.push_back(node("attn/Mul", "Mul", {"c", "s"}, {"y"}));
  } else {
    add_initializer(g, "c", make<float>({}, {a.divisor}));
    g.nodes.push_back(node("attn/Div", "Div", {"s", "c"}, {"y"}));
  }
  add_output(g, "y");
  if (a.transposed_is_output) add_output(g, "kt");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

std::map<std::string, Tensor> feeds() {
  return {{"q", random_tensor({2, 3, 4, 8}, 3, -2.f, 2.f)}, {"k", random_tensor({2, 3, 4, 8}, 4, -2.f, 2.f)}};
}

}  // namespace

TEST_CASE("matmul fusions: attention's (q @ k^T) / 4 becomes one FusedMatMul", "[passes][fusion]") {
  for (bool mul : {false, true}) {
    INFO("scale as Mul: " << mul);
    Model m = attention({.scale_is_mul = mul});
    auto before = run_model(m, feeds());
    int64_t changed = 0;
    REQUIRE(apply_pass("matmul_scale_fusion", m, {}, &changed));
    CHECK(changed == 1);
    REQUIRE(apply_pass("matmul_transpose_fusion", m, {}, &changed));
    CHECK(changed == 1);
    REQUIRE(m.graph.nodes.size() == 1);
    const Node& n = m.graph.nodes[0];
    CHECK(n.op_type == "FusedMatMul");
    CHECK(n.domain == kOrtTrainDomain);
    CHECK(n.inputs == std::vector<std::string>{"q", "k"});
    CHECK(n.outputs == std::vector<std::string>{"y"});
    CHECK(n.attr_int("transA", -1) == 0);
    CHECK(n.attr_int("transB", -1) == 1);
    CHECK(n.attr_float("alpha", 0) == 0.25f);
    require_close(run_model(m, feeds()).at("y"), before.at("y"), 1e-6, 1e-6);
  }
}

TEST_CASE("matmul fusions: a scale that is no power of two stays, the Transpose still folds", "[passes][fusion]") {
  Model m = attention({.divisor = std::sqrt(8.f)});
  auto before = run_model(m, feeds());
  REQUIRE_FALSE(apply_pass("matmul_scale_fusion", m));
  REQUIRE(apply_pass("matmul_transpose_fusion", m));
  CHECK(count_op(m, "FusedMatMul") == 1);
  CHECK(count_op(m, "Div") == 1);
  CHECK(count_op(m, "Transpose") == 0);
  require_close(run_model(m, feeds()).at("y"), before.at("y"), 1e-6, 1e-6);
}

TEST_CASE("matmul fusions: other permutations and needed transposes stay", "[passes][fusion]") {
  Model batch_too = attention({.perm = {1, 0, 3, 2}, .k_dims = {3, 2, 4, 8}});  // swaps batch dims as well
  REQUIRE_FALSE(apply_pass("matmul_transpose_fusion", batch_too));
  Model needed = attention({.transposed_is_output = true});
  REQUIRE_FALSE(apply_pass("matmul_transpose_fusion", needed));
}

TEST_CASE("matmul fusions: a 2-D Transpose without perm folds into transA", "[passes][fusion]") {
  Model m = empty_model();
  Graph& g = m.graph;
  add_input(g, "a", DType::kFloat, {5, 3});
  add_input(g, "b", DType::kFloat, {5, 2});
  g.nodes.push_back(node("t", "Transpose", {"a"}, {"at"}));
  g.nodes.push_back(node("mm", "MatMul", {"at", "b"}, {"y"}));
  add_output(g, "y");
  REQUIRE(infer_shapes(m).ok());
  std::map<std::string, Tensor> in = {{"a", random_tensor({5, 3}, 1, -1.f, 1.f)},
                                      {"b", random_tensor({5, 2}, 2, -1.f, 1.f)}};
  auto before = run_model(m, in);
  REQUIRE(apply_pass("matmul_transpose_fusion", m));
  REQUIRE(m.graph.nodes.size() == 1);
  CHECK(m.graph.nodes[0].attr_int("transA", 0) == 1);
  CHECK(m.graph.nodes[0].attr_int("transB", 1) == 0);
  require_close(run_model(m, in).at("y"), before.at("y"), 1e-6, 1e-6);
}

namespace {

struct Linear {
  Dims bias_dims = {5};
  bool bias_first = true;       // Add(bias, product), as torch.onnx.export writes nn.Linear
  bool weight_transposed = false;  // X @ Transpose(W) with W [5, 8]
  bool product_is_output = false;
  int64_t in_features = 8;  // K
};

// y = X @ W + bias over [2, 4, K] X and a [K, 5] W.
Model linear(const Linear& l) {
  Model m = empty_model();
  Graph& g = m.graph;
  const int64_t k = l.in_features;
  add_input(g, "x", DType::kFloat, {2, 4, k});
  add_initializer(g, "w", l.weight_transposed ? random_tensor({5, k}, 5, -1.f, 1.f) : random_tensor({k, 5}, 5, -1.f, 1.f));
  add_initializer(g, "b", random_tensor(l.bias_dims, 6, -1.f, 1.f));
  std::string w = "w";
  if (l.weight_transposed) {
    g.nodes.push_back(node("fc/Transpose", "Transpose", {"w"}, {"wt"}));
    w = "wt";
  }
  g.nodes.push_back(node("fc/MatMul", "MatMul", {"x", w}, {"p"}));
  g.nodes.push_back(node("fc/Add", "Add", l.bias_first ? std::vector<std::string>{"b", "p"}
                                                         : std::vector<std::string>{"p", "b"}, {"y"}));
  add_output(g, "y");
  if (l.product_is_output) add_output(g, "p");
  REQUIRE(infer_shapes(m).ok());
  return m;
}

}  // namespace

TEST_CASE("matmul fusions: a Linear layer's bias Add becomes the FusedMatMul's epilogue, exactly", "[passes][fusion]") {
  // MatMul and FusedMatMul run the same GEMM library, each of the two in
  // turn. Up to K 256 the kernel writes the bias first and accumulates the
  // product onto it (runtime/cpu/kernels/matmul_gemm.cc), above it adds the
  // bias after: both must give the Add's bits.
  for (const char* library : {"openblas", "onednn"})
    for (int64_t k : {8, 256, 1024})
      for (bool first : {true, false})
        for (bool transposed : {false, true}) {
          REQUIRE(set_gemm_library(library).ok());
          INFO(library << ", K " << k << ", bias first: " << first << ", weight transposed: " << transposed);
          Model m = linear({.bias_first = first, .weight_transposed = transposed, .in_features = k});
          std::map<std::string, Tensor> in = {{"x", random_tensor({2, 4, k}, 7, -1.f, 1.f)}};
          auto before = run_model(m, in);
          if (transposed) REQUIRE(apply_pass("matmul_transpose_fusion", m));
          int64_t changed = 0;
          REQUIRE(apply_pass("matmul_add_fusion", m, {}, &changed));
          CHECK(changed == 1);
          REQUIRE(m.graph.nodes.size() == 1);
          const Node& n = m.graph.nodes[0];
          CHECK(n.op_type == "FusedMatMul");
          CHECK(n.inputs == std::vector<std::string>{"x", "w", "b"});
          CHECK(n.attr_int("transB", -1) == (transposed ? 1 : 0));
          require_close(run_model(m, in).at("y"), before.at("y"), 0, 0);  // the same additions: bit for bit
        }
  REQUIRE(set_gemm_library("openblas").ok());
}

TEST_CASE("matmul fusions: a bias of another shape, or a product needed elsewhere, stays", "[passes][fusion]") {
  Model full = linear({.bias_dims = {4, 5}});  // broadcast over rows, not one row vector
  REQUIRE_FALSE(apply_pass("matmul_add_fusion", full));
  Model needed = linear({.product_is_output = true});
  REQUIRE_FALSE(apply_pass("matmul_add_fusion", needed));
}
