#include <cuda_runtime.h>

#include <cstdio>

#include "cuda_kernels/device_query.h"

namespace ort_train::cuda {

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

std::string device_description(int index) {
  cudaDeviceProp p{};
  cudaError_t e = cudaGetDeviceProperties(&p, index);
  if (e != cudaSuccess) return cudaGetErrorString(e);
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s (sm_%d%d, %.1f GiB)", p.name, p.major, p.minor,
                p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace ort_train::cuda
