#include "runtime/cpu/parallel.h"

#include <omp.h>

#include "runtime/cpu/usable_cores.h"

namespace ort_train {

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_parallel();  // 0 sequential, 1 pthreads, 2 OpenMP

namespace {
int g_threads = 0;
}

void set_cpu_threads(int n) {
  g_threads = std::min(n > 0 ? n : cpu_cores(), kMaxCpuThreads);
  openblas_set_num_threads(g_threads);
}

int cpu_cores() { return usable_cores(); }

bool blas_shares_openmp_threads() { return openblas_get_parallel() == 2; }

int cpu_threads() {
  if (g_threads == 0) g_threads = omp_get_max_threads();
  return g_threads;
}

}  // namespace ort_train
