// Loops of many small GEMMs (attention's per-head products, a convolution's
// per-image ones) run one GEMM per thread instead of splitting each GEMM over
// the threads: the BLAS runs on the kernels' OpenMP pool, and a split GEMM
// forks and joins that pool on every call, which costs more than a small
// product does. Inside the parallel region the BLAS keeps to its calling
// thread. A GEMM splits M and N, never K, so both ways give the same bits.
#pragma once
#include <cstdint>

#include "runtime/cpu/gemm_backend.h"
#include "runtime/cpu/parallel.h"

namespace ort_train {

// Up to this many multiply-adds per GEMM (a 256x256x256 product), a loop of
// GEMMs is threaded across its entries.
constexpr int64_t kSmallGemmMacs = int64_t{1} << 24;

// Calls fn(first, last) over [0, count) GEMM entries of `macs` multiply-adds
// each: split across threads when they are small, in one call otherwise.
template <typename F>
void for_each_gemm(int64_t count, int64_t macs, F&& fn) {
  if (count > 1 && macs <= kSmallGemmMacs) {
    const CpuGemm backend = current_cpu_gemm();  // the kernel's choice, on its workers too
    parallel_for(count, 1, [&](int64_t first, int64_t last) {
      CpuGemmScope scope(backend);
      fn(first, last);
    });
  } else if (count > 0)
    fn(int64_t{0}, count);
}

}  // namespace ort_train
