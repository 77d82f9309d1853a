#include <cmath>

#include "cuda_kernels/launch.cuh"
#include "cuda_kernels/lp_mvn.h"
#include "numerics/lp_mvn.h"

namespace ort_train::cuda {
namespace {

template <typename T>
__global__ void lp_mvn_kernel(bool mvn, int p, const int64_t* base, int64_t rows, const int64_t* row, int64_t n,
                              const T* x, const T* dy, T* out) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < rows; k += int64_t{gridDim.x} * blockDim.x) {
    const T* xr = x + base[k];
    double s = 0, q = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(xr[row[i]]);
      s += mvn ? v : (p == 1 ? fabs(v) : v * v);
      q += v * v;
    }
    double a, sd = 0;
    if (mvn) {
      a = s / static_cast<double>(n);
      sd = sqrt(fmax(q / static_cast<double>(n) - a * a, 0.0));
    } else {
      a = p == 1 ? s : sqrt(s);
    }
    T* o = out + base[k];
    if (!dy) {
      for (int64_t i = 0; i < n; ++i) {
        const double v = static_cast<double>(xr[row[i]]);
        o[row[i]] = static_cast<T>(mvn ? (v - a) / (sd + kMvnEpsilon) : v / a);
      }
      continue;
    }
    const T* gr = dy + base[k];
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double g = static_cast<double>(gr[row[i]]), v = static_cast<double>(xr[row[i]]);
      s1 += g;
      s2 += mvn ? g * (v - a) : g * v / a;
    }
    for (int64_t i = 0; i < n; ++i) {
      const double g = static_cast<double>(gr[row[i]]), v = static_cast<double>(xr[row[i]]);
      o[row[i]] = static_cast<T>(mvn ? mvn_dx(g, v, a, sd, s1 / n, s2 / n) : lp_norm_dx(g, v, a, s2, p));
    }
  }
}

}  // namespace

cudaError_t launch_lp_mvn(ElemType t, bool mvn, int p, const int64_t* base, int64_t rows, const int64_t* row,
                          int64_t row_size, const void* x, const void* dy, void* out, cudaStream_t s) {
  if (rows == 0 || row_size == 0) return cudaSuccess;
  switch (t) {
    case ElemType::kF32:
      lp_mvn_kernel<float><<<blocks_for(rows), kThreads, 0, s>>>(mvn, p, base, rows, row, row_size,
                                                                 static_cast<const float*>(x),
                                                                 static_cast<const float*>(dy), static_cast<float*>(out));
      break;
    case ElemType::kF64:
      lp_mvn_kernel<double><<<blocks_for(rows), kThreads, 0, s>>>(mvn, p, base, rows, row, row_size,
                                                                  static_cast<const double*>(x),
                                                                  static_cast<const double*>(dy),
                                                                  static_cast<double*>(out));
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace ort_train::cuda
