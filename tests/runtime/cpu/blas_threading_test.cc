// The BLAS that actually loaded runs on the kernels' OpenMP threads: the build
// links OpenBLAS's OpenMP variant by path, and this catches a loader that took
// the system's default (pthread) libopenblas.so.0 instead.
#include "runtime/cpu/parallel.h"
#include "test_util.h"

using namespace ort_train;

TEST_CASE("The loaded BLAS shares the kernels' OpenMP threads", "[runtime][threads]") {
#ifdef ORT_TRAIN_BLAS_SHARES_OPENMP
  REQUIRE(blas_shares_openmp_threads());
#else
  ORT_TRAIN_SKIP("this build links a BLAS without OpenMP threads (a clang build, or no libopenblas0-openmp)");
#endif
}
