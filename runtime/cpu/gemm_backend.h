// Which library multiplies a float32 GEMM on the CPU: OpenBLAS's sgemm or
// oneDNN's (issue 54). OpenBLAS picks its kernels from the CPU it detects,
// unless OPENBLAS_CORETYPE forces an older one (some clusters set Haswell);
// oneDNN picks its own from CPUID. Neither wins every shape, so an op whose
// work is GEMMs (MatMul, Gemm, FusedMatMul, Conv and its gradient) registers
// both as candidates of the measured kernel choice (runtime/kernel_choice.h)
// through `gemm_backend_choice`. Which runs is train's --gemm-library:
// openblas (the default), onednn, or measured (timed per shape on the user's
// machine, in situ: the run's own calls are the timings, within 10% of their
// time, so the first steps are not slowed by more; the faster kept and
// recorded in --kernel-choices). A choice a
// --kernel-choices file or a checkpoint folder holds is followed whatever
// the setting, and --deterministic pins OpenBLAS. The default is OpenBLAS
// because measuring costs more than it wins on the development machine
// (docs/benchmarks.md). The choice reaches runtime/cpu/blas.h's float gemm
// through a scope on the kernel's thread, and for_each_gemm carries it to
// the workers.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/kernel.h"

namespace ort_train {

enum class CpuGemm : uint8_t { kOpenBlas, kOneDnn };

// --gemm-library: "openblas", "onednn" or "measured"; an error names them.
enum class GemmLibrary : uint8_t { kOpenBlas, kOneDnn, kMeasured };
Status set_gemm_library(const std::string& name);
GemmLibrary gemm_library();

// The backend of the kernel running on this thread (OpenBLAS outside any scope).
CpuGemm current_cpu_gemm();

// Sets this thread's backend while it lives.
class CpuGemmScope {
 public:
  explicit CpuGemmScope(CpuGemm backend);
  ~CpuGemmScope();
  CpuGemmScope(const CpuGemmScope&) = delete;
  CpuGemmScope& operator=(const CpuGemmScope&) = delete;

 private:
  CpuGemm outer_;
};

// oneDNN's row-major sgemm: C = alpha op(A) op(B) + beta C. False when oneDNN
// refuses the call (the caller then uses OpenBLAS).
bool onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
// How many GEMMs oneDNN has multiplied in this process (tests: that a choice of
// "onednn" reaches every GEMM of the kernel, its workers' included).
int64_t onednn_sgemm_calls();

// `kernel` with its float32 GEMMs' library as --gemm-library says (candidates
// "openblas", first and --deterministic's, and "onednn"); inputs of other
// dtypes run `kernel` as it is. `own`, when given, is a third candidate named
// `own_name` that does the op some other way (Conv: oneDNN's own
// convolution, runtime/cpu/onednn_conv.h): it runs only where the choice is
// measured or a kernel-choices file names it.
KernelFn gemm_backend_choice(KernelFn kernel, const std::string& own_name = "", KernelFn own = {});

// What each library found on this CPU, for --version and the log:
// "Zen (detected; OPENBLAS_CORETYPE unset)", "2.6.3 (ISA avx512_core_bf16)".
std::string openblas_kernel_description();
std::string onednn_description();

}  // namespace ort_train
