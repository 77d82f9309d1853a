// `ort_train --version`: the version, the commit it was built from, and the
// build's options (CUDA, cuDNN, NCCL, MPI, BLAS and whether its threads are
// OpenMP's, read from the library that actually loaded), so a bug report says what
// ran. The commit header is regenerated at every build (tools/git_commit.cmake).
#include <string>

#include "apps/build_info.h"
#include "apps/commands.h"
#include "apps/git_commit.h"
#include "runtime/cpu/gemm_backend.h"
#include "runtime/cpu/openmp_wait.h"
#include "runtime/cpu/parallel.h"

namespace ort_train::app {

std::string version_text() {
  std::string s = "ort_train " ORT_TRAIN_VERSION " (commit " ORT_TRAIN_GIT_COMMIT ")\n";
  s += "build:  " ORT_TRAIN_BUILD_TYPE ", " ORT_TRAIN_COMPILER ", C++20\n";
  s += "CUDA:   " ORT_TRAIN_BUILD_CUDA "\n";
  s += "cuDNN:  " ORT_TRAIN_BUILD_CUDNN "\n";
  s += "NCCL:   " ORT_TRAIN_BUILD_NCCL "\n";
  s += "MPI:    " ORT_TRAIN_BUILD_MPI "\n";
  s += "BLAS:   " ORT_TRAIN_BUILD_BLAS;
  s += blas_shares_openmp_threads() ? " (threads: OpenMP, shared with the kernels)"
                                    : " (threads: its own pool, beside the kernels' OpenMP threads)";
  s += "\nBLAS kernels: " + openblas_kernel_description();
  s += "\noneDNN: " + onednn_description() + ": bfloat16 GEMMs, and float32 ones where measured faster than OpenBLAS";
  s += "\nidle threads: " + openmp_wait_description();
  return s;
}

}  // namespace ort_train::app
