// The float32 GEMM library chosen per shape (runtime/cpu/gemm_backend.h):
// oneDNN's sgemm agrees with OpenBLAS's to float32 rounding in every
// transpose; a MatMul, a batched MatMul (whose GEMMs run on worker threads),
// a Gemm and a Conv forced to "onednn" run every GEMM there and agree with
// "openblas"; --gemm-library's settings; --deterministic pins OpenBLAS; a
// measured run starts with OpenBLAS alone (in situ), and one measured at once
// records its choice.
#include <cblas.h>

#include "runtime/cpu/gemm_backend.h"
#include "runtime/kernel_choice.h"
#include "test_util.h"

namespace ort_train::testing {
namespace {

struct ChoicesReset {
  ChoicesReset() {
    KernelChoices::instance().clear();
    KernelChoices::instance().set_deterministic(false);
  }
  ~ChoicesReset() {
    KernelChoices::instance().clear();
    KernelChoices::instance().set_deterministic(false);
    (void)set_gemm_library("openblas");
  }
};

// The node's outputs with `op` forced to `backend`, and how many GEMMs oneDNN made.
std::pair<std::vector<Tensor>, int64_t> forced(const NodeSpec& spec, const std::string& backend) {
  KernelChoices::instance().clear();
  KernelChoices::instance().keep(spec.op, backend);
  const int64_t before = onednn_sgemm_calls();
  std::vector<Tensor> out = run_node(spec);
  return {out, onednn_sgemm_calls() - before};
}

}  // namespace

TEST_CASE("gemm_backend: oneDNN's sgemm agrees with OpenBLAS's in every transpose", "[gemm_backend]") {
  const int64_t m = 37, n = 53, k = 129;
  Tensor a = random_tensor({m * k}, 1), b = random_tensor({k * n}, 2), c0 = random_tensor({m * n}, 3);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("ta " << ta << " tb " << tb);
      const int64_t lda = ta ? m : k, ldb = tb ? k : n;
      Tensor ours = Tensor::host(DType::kFloat, {m * n}), ref = Tensor::host(DType::kFloat, {m * n});
      std::copy_n(c0.data<float>(), m * n, ours.data<float>());
      std::copy_n(c0.data<float>(), m * n, ref.data<float>());
      // beta 1: the product is added to C, as Gemm's bias and ConvGrad's dW use it.
      REQUIRE(onednn_sgemm(ta, tb, m, n, k, 0.5f, a.data<float>(), lda, b.data<float>(), ldb, 1.f, ours.data<float>(), n));
      cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 0.5f,
                  a.data<float>(), lda, b.data<float>(), ldb, 1.f, ref.data<float>(), n);
      CHECK(relative_disagreement(ours, ref) <= 1e-6);
    }
}

TEST_CASE("gemm_backend: MatMul, batched MatMul, Gemm and Conv forced to onednn run there and agree",
          "[gemm_backend]") {
  ChoicesReset reset;
  std::vector<NodeSpec> specs = {
      {.op = "MatMul", .inputs = {random_tensor({4, 24, 32}, 4), random_tensor({32, 40}, 5)}},
      // 8 small GEMMs: threaded across the batch, each on a worker thread.
      {.op = "MatMul", .inputs = {random_tensor({8, 16, 16}, 6), random_tensor({8, 16, 16}, 7)}},
      {.op = "Gemm",
       .inputs = {random_tensor({24, 32}, 8), random_tensor({40, 32}, 9), random_tensor({40}, 10)},
       .attributes = {Attribute::make_int("transB", 1)}},
      // Two images of 81 positions: side by side in one GEMM.
      {.op = "Conv",
       .inputs = {random_tensor({2, 3, 9, 9}, 11), random_tensor({4, 3, 3, 3}, 12)},
       .attributes = {Attribute::make_ints("pads", {1, 1, 1, 1})}},
      // Two images of 256 positions: one GEMM each.
      {.op = "Conv",
       .inputs = {random_tensor({2, 3, 16, 16}, 17), random_tensor({4, 3, 3, 3}, 18)},
       .attributes = {Attribute::make_ints("pads", {1, 1, 1, 1})}},
  };
  const std::vector<int64_t> gemms = {1, 8, 1, 1, 2};
  for (size_t i = 0; i < specs.size(); ++i) {
    INFO(specs[i].op << " case " << i);
    auto [blas, blas_calls] = forced(specs[i], "openblas");
    auto [dnnl, dnnl_calls] = forced(specs[i], "onednn");
    CHECK(blas_calls == 0);
    CHECK(dnnl_calls == gemms[i]);
    CHECK(relative_disagreement(dnnl[0], blas[0]) <= 1e-6);
  }
  // Other dtypes never reach the choice: float64 stays OpenBLAS's.
  auto wide_tensor = [](Dims dims, uint64_t seed) {
    return Tensor::from_vector<double>(dims, random_tensor(dims, seed).to_double_vector());
  };
  NodeSpec wide{.op = "MatMul", .inputs = {wide_tensor({4, 5}, 13), wide_tensor({5, 6}, 14)}};
  CHECK(forced(wide, "onednn").second == 0);
}

TEST_CASE("gemm_backend: --gemm-library openblas and onednn run their library untimed", "[gemm_backend]") {
  ChoicesReset reset;
  NodeSpec spec{.op = "MatMul", .inputs = {random_tensor({64, 128}, 17), random_tensor({128, 96}, 18)}};
  REQUIRE(gemm_library() == GemmLibrary::kOpenBlas);  // the default
  int64_t before = onednn_sgemm_calls();
  const Tensor blas = run_node(spec)[0];
  CHECK(onednn_sgemm_calls() == before);
  REQUIRE(set_gemm_library("onednn").ok());
  before = onednn_sgemm_calls();
  const Tensor dnnl = run_node(spec)[0];
  CHECK(onednn_sgemm_calls() == before + 1);  // once: not timed
  CHECK(KernelChoices::instance().empty());   // nothing chosen, nothing recorded
  REQUIRE(set_gemm_library("openblas").ok());
  CHECK(relative_disagreement(dnnl, blas) <= 1e-6);
  CHECK_FALSE(set_gemm_library("mkl").ok());
}

TEST_CASE("gemm_backend: --deterministic pins OpenBLAS, and a measured run records its choice per shape",
          "[gemm_backend]") {
  ChoicesReset reset;
  NodeSpec spec{.op = "MatMul", .inputs = {random_tensor({64, 128}, 15), random_tensor({128, 96}, 16)}};
  KernelChoices::instance().set_deterministic(true);
  const int64_t before = onednn_sgemm_calls();
  run_node(spec);
  CHECK(onednn_sgemm_calls() == before);
  CHECK(KernelChoices::instance().all().empty());
  KernelChoices::instance().set_deterministic(false);
  REQUIRE(set_gemm_library("measured").ok());
  // In situ, a first call runs OpenBLAS alone: nothing is paid for measuring yet.
  const int64_t untouched = onednn_sgemm_calls();
  run_node(spec);
  CHECK(onednn_sgemm_calls() == untouched);
  CHECK(KernelChoices::instance().all().empty());
  // Measured at once (rank 0's agreement run): the choice is made and recorded in the call.
  KernelChoices::instance().clear();
  KernelChoices::instance().set_measure_at_once(true);
  run_node(spec);
  KernelChoices::instance().set_measure_at_once(false);
  REQUIRE(set_gemm_library("openblas").ok());
  auto all = KernelChoices::instance().all();
  REQUIRE(all.size() == 1);
  CHECK_THAT(all.begin()->first, Catch::StartsWith("MatMul|cpu|") && Catch::Contains("[64,128]"));
  CHECK((all.begin()->second == "openblas" || all.begin()->second == "onednn"));
  CHECK(onednn_sgemm_calls() > before);  // timed as a candidate
}

}  // namespace ort_train::testing
