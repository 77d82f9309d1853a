#include "runtime/cpu/gemm_backend.h"

#include <oneapi/dnnl/dnnl.h>

#include <atomic>
#include <cstdlib>

#include <fmt/format.h>

#include "runtime/kernel_choice.h"

extern "C" char* openblas_get_corename();

namespace ort_train {
namespace {

thread_local CpuGemm g_backend = CpuGemm::kOpenBlas;
std::atomic<GemmLibrary> g_library{GemmLibrary::kOpenBlas};
std::atomic<int64_t> g_onednn_calls{0};

std::string isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    default: return fmt::format("isa {:#x}", static_cast<unsigned>(isa));
  }
}

}  // namespace

CpuGemm current_cpu_gemm() { return g_backend; }

CpuGemmScope::CpuGemmScope(CpuGemm backend) : outer_(g_backend) { g_backend = backend; }
CpuGemmScope::~CpuGemmScope() { g_backend = outer_; }

bool onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  g_onednn_calls.fetch_add(1, std::memory_order_relaxed);
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
}

int64_t onednn_sgemm_calls() { return g_onednn_calls.load(std::memory_order_relaxed); }

Status set_gemm_library(const std::string& name) {
  if (name == "openblas") g_library = GemmLibrary::kOpenBlas;
  else if (name == "onednn") g_library = GemmLibrary::kOneDnn;
  else if (name == "measured") g_library = GemmLibrary::kMeasured;
  else return invalid_argument("--gemm-library '{}': expected openblas, onednn or measured", name);
  return Status::Ok();
}

GemmLibrary gemm_library() { return g_library; }

KernelFn gemm_backend_choice(KernelFn kernel, const std::string& own_name, KernelFn own) {
  auto with = [kernel](CpuGemm backend) {
    return [kernel, backend](KernelContext& ctx) {
      CpuGemmScope scope(backend);
      return kernel(ctx);
    };
  };
  // OpenBLAS first: the reference the other must agree with, and the one
  // --deterministic pins (it is what every earlier figure measured).
  std::vector<KernelCandidate> candidates{{"openblas", with(CpuGemm::kOpenBlas), true},
                                          {"onednn", with(CpuGemm::kOneDnn), true}};
  // Its own threads' split may change the bits from run to run: never --deterministic's.
  if (own) candidates.push_back({own_name, own, false});
  KernelFn chosen = measured_choice(DeviceKind::kCpu, std::move(candidates), {}, {}, /*log_at_debug=*/true,
                                    Measuring::kInSitu);
  return [kernel, chosen](KernelContext& ctx) {
    if (!ctx.has_input(0) || ctx.input(0).dtype() != DType::kFloat) return kernel(ctx);
    const KernelChoices& choices = KernelChoices::instance();
    if (choices.deterministic()) return kernel(ctx);  // OpenBLAS, untimed
    const GemmLibrary library = gemm_library();
    // A choice from a file or a checkpoint folder is followed (a resumed run
    // multiplies as the run it continues); none made, the setting decides.
    if (library == GemmLibrary::kMeasured ||
        (choices.holds_op(kernel_choice_op(ctx.node())) &&
         !choices.find(kernel_choice_key(ctx, DeviceKind::kCpu)).empty()))
      return chosen(ctx);
    CpuGemmScope scope(library == GemmLibrary::kOneDnn ? CpuGemm::kOneDnn : CpuGemm::kOpenBlas);
    return kernel(ctx);
  };
}

std::string openblas_kernel_description() {
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  return fmt::format("{} ({})", openblas_get_corename(),
                     forced && *forced ? fmt::format("OPENBLAS_CORETYPE={} forces it", forced)
                                       : std::string("detected; OPENBLAS_CORETYPE unset"));
}

std::string onednn_description() {
  const dnnl_version_t* v = dnnl_version();
  return fmt::format("{}.{}.{} (ISA {})", v->major, v->minor, v->patch, isa_name(dnnl_get_effective_cpu_isa()));
}

}  // namespace ort_train
