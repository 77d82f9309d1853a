#include "runtime/cpu/bf16_gemm.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "runtime/cpu/widened_gemm.h"

namespace ort_train {
namespace {

dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// Making a primitive costs tens of microseconds (oneDNN picks and JITs an
// implementation), so each shape is made once; a training step repeats its
// shapes every step.
using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float, bool, bool>;

struct Made {
  dnnl::matmul matmul;
  dnnl::memory::desc a, b, c, bias, scratchpad;
};

Result<Made> primitive(const Key& key) {
  static std::mutex mu;
  static std::map<Key, Made> made;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = made.find(key); it != made.end()) return it->second;
  auto [ta, tb, m, n, k, lda, ldb, ldc, alpha, float_out, has_bias] = key;
  using dt = dnnl::memory::data_type;
  // Transposes are strides: op(A)[i, p] is A[p * lda + i] when ta.
  dnnl::memory::desc a({m, k}, dt::bf16, ta ? dnnl::memory::dims{1, lda} : dnnl::memory::dims{lda, 1});
  dnnl::memory::desc b({k, n}, dt::bf16, tb ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1});
  dnnl::memory::desc c({m, n}, float_out ? dt::f32 : dt::bf16, dnnl::memory::dims{ldc, 1});
  dnnl::memory::desc bias({1, n}, dt::bf16, dnnl::memory::dims{n, 1});
  dnnl::primitive_attr attr;
  if (alpha != 1.f) attr.set_output_scales(0, {alpha});
  // Batched products run one primitive on several threads at once; with the
  // library's scratchpad they shared its memory and a batch entry came out
  // wrong now and then (the sanitizer suite under load). Each call brings
  // its own (run's thread_local buffer).
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  try {
    dnnl::matmul::desc d = has_bias ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c);
    dnnl::matmul::primitive_desc pd(d, attr, cpu_engine());
    return made.emplace(key, Made{dnnl::matmul(pd), a, b, c, bias, pd.scratchpad_desc()}).first->second;
  } catch (const dnnl::error& e) {
    return make_error(ErrorCode::kInternal, "oneDNN made no bfloat16 matmul for [{}x{}] @ [{}x{}]: {}", m, k, k, n,
                      e.what());
  }
}

// Whether oneDNN makes bfloat16 matmuls on this CPU (2.6 needs AVX-512; on
// an AVX2 machine it makes none): asked once, with a small product.
bool onednn_has_bf16_matmul() {
  static const bool has = [] {
    bool ok = primitive(Key{false, false, 4, 4, 4, 4, 4, 4, 1.f, true, false}).ok();
    if (!ok) spdlog::debug("oneDNN has no bfloat16 matmul on this CPU: bfloat16 GEMMs widen to float32 (sgemm)");
    return ok;
  }();
  return has;
}

template <typename Out>
Status run(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a, int64_t lda,
           const BFloat16* b, int64_t ldb, Out* c, int64_t ldc, const BFloat16* bias) {
  if (m == 0 || n == 0) return Status::Ok();
  if (!onednn_has_bf16_matmul()) return widened_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, bias);
  constexpr bool float_out = std::is_same_v<Out, float>;
  if (k == 0) {  // oneDNN wants non-empty operands; the product of nothing is zero
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = Out(bias ? static_cast<float>(bias[j]) : 0.f);
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(Made mm, primitive(Key{ta, tb, m, n, k, lda, ldb, ldc, alpha, float_out, bias != nullptr}));
  dnnl::engine& engine = cpu_engine();
  try {
    // A stream per thread: batched products call this from several threads at once.
    thread_local dnnl::stream stream(engine);
    dnnl::memory ma(mm.a, engine, const_cast<BFloat16*>(a));
    dnnl::memory mb(mm.b, engine, const_cast<BFloat16*>(b));
    dnnl::memory mc(mm.c, engine, c);
    thread_local std::vector<uint8_t> scratch;
    scratch.resize(std::max<size_t>(mm.scratchpad.get_size(), 1));
    dnnl::memory ms(mm.scratchpad, engine, scratch.data());
    std::unordered_map<int, dnnl::memory> args{
        {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}, {DNNL_ARG_SCRATCHPAD, ms}};
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(mm.bias, engine, const_cast<BFloat16*>(bias)));
    mm.matmul.execute(stream, args);
    stream.wait();
  } catch (const dnnl::error& e) {
    return make_error(ErrorCode::kInternal, "oneDNN bfloat16 matmul [{}x{}] @ [{}x{}] failed: {}", m, k, k, n,
                      e.what());
  }
  return Status::Ok();
}

}  // namespace

Status gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a, int64_t lda,
                 const BFloat16* b, int64_t ldb, BFloat16* c, int64_t ldc, const BFloat16* bias) {
  if (!bias || alpha == 1.f) return run(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, bias);
  // oneDNN 2.6 applies output scales after its bias: the scaled product is
  // made in float32 and the bias added here, before the one rounding.
  thread_local std::vector<float> acc;
  acc.resize(static_cast<size_t>(m * n));
  RETURN_IF_ERROR(run(ta, tb, m, n, k, alpha, a, lda, b, ldb, acc.data(), n, static_cast<const BFloat16*>(nullptr)));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = BFloat16(acc[static_cast<size_t>(i * n + j)] + static_cast<float>(bias[j]));
  return Status::Ok();
}

Status gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const BFloat16* a, int64_t lda,
                 const BFloat16* b, int64_t ldb, float* c, int64_t ldc) {
  return run(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, nullptr);
}

}  // namespace ort_train
