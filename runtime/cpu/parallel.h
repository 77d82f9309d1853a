// Multithreading for CPU kernels: OpenMP over index ranges, with a grain size
// so small tensors stay on one thread (forking costs more than it saves).
#pragma once
#include <algorithm>
#include <cstdint>

namespace ort_train {

// The most threads --threads takes: OpenBLAS sizes per-thread buffers at
// start, and 100000 threads hung its initialisation.
constexpr int kMaxCpuThreads = 1024;

void set_cpu_threads(int n);  // n = 0: one per core; at most kMaxCpuThreads
int cpu_threads();
int cpu_cores();  // the cores this process may run on (runtime/cpu/usable_cores.h)

// Whether the BLAS that was loaded runs its GEMMs on OpenMP's threads, the
// kernels' own pool (OpenBLAS's OpenMP build), rather than a pool of its own.
bool blas_shares_openmp_threads();

// Calls fn(begin, end) over [0, n) split into chunks of at least `grain` items.
template <typename F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  int threads = cpu_threads();
  int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  int64_t per = (n + chunks - 1) / chunks;
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t b = c * per, e = std::min(n, b + per);
    if (b < e) fn(b, e);
  }
}

// Elementwise work: a grain that keeps ~32K elements per thread.
constexpr int64_t kElementwiseGrain = 32768;

}  // namespace ort_train
