// Every CUDA, cuBLAS and cuDNN call goes through one of these: a failure
// becomes an error value naming the call, the library's own error text and
// where it happened. The executor adds the node's name and op when a kernel
// returns it. Library code never aborts on a GPU error.
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "graph/status.h"

namespace ort_train::cuda {

inline const char* cublas_error_name(cublasStatus_t s) { return cublasGetStatusString(s); }

}  // namespace ort_train::cuda

#define ORT_CUDA_ERROR_(lib, text, expr) \
  ::ort_train::make_error(::ort_train::ErrorCode::kInternal, "{} error: {} (in {} at {}:{})", lib, text, expr, __FILE__, __LINE__)

#define CUDA_RETURN_IF_ERROR(expr)                                                    \
  do {                                                                                \
    cudaError_t _e = (expr);                                                          \
    if (_e != cudaSuccess) return ORT_CUDA_ERROR_("CUDA", cudaGetErrorString(_e), #expr); \
  } while (0)

#define CUBLAS_RETURN_IF_ERROR(expr)                                                                          \
  do {                                                                                                        \
    cublasStatus_t _s = (expr);                                                                               \
    if (_s != CUBLAS_STATUS_SUCCESS) return ORT_CUDA_ERROR_("cuBLAS", ::ort_train::cuda::cublas_error_name(_s), #expr); \
  } while (0)

#define CUDNN_RETURN_IF_ERROR(expr)                                                   \
  do {                                                                                \
    cudnnStatus_t _s = (expr);                                                        \
    if (_s != CUDNN_STATUS_SUCCESS) return ORT_CUDA_ERROR_("cuDNN", cudnnGetErrorString(_s), #expr); \
  } while (0)

// After a kernel launch: launch errors (bad configuration, no device) surface here;
// errors inside the kernel surface at the next synchronizing call.
#define CUDA_RETURN_IF_LAUNCH_FAILED() CUDA_RETURN_IF_ERROR(cudaGetLastError())
