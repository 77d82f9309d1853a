// The one GPU this process trains on: its compute stream (every kernel,
// library call and copy of a step is queued there, so buffers returned to the
// caching allocator can be reused by the next launch without events; only
// the next batch's upload runs on its own stream, batch_staging.h),
// cuBLAS and cuDNN handles bound to that stream (cuBLASLt takes it per call), pinned staging for
// uploads, and the settings (determinism, TF32) every kernel consults.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <memory>
#include <string>

#include "graph/status.h"
#include "runtime/allocator.h"
#include "runtime/cuda/index_faults.h"
#include "runtime/cuda/pinned_staging.h"
#include "runtime/device.h"

namespace ort_train::cuda {

struct CudaContext {
  int device = 0;
  cudaDeviceProp props{};
  cudaStream_t compute = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublas_lt = nullptr;  // GEMMs with a bias epilogue (kernels/gemm_bias_lt.h)
  cudnnHandle_t cudnn = nullptr;
  std::shared_ptr<Allocator> allocator;  // the process-wide caching device allocator
  std::unique_ptr<PinnedStaging> staging;
  std::unique_ptr<IndexFaults> index_faults;  // bad indices the kernels skipped, read after each stream wait
  bool deterministic = false;
  bool allow_tf32 = true;

  ~CudaContext();
};

// Creates the context for `settings.index` (once; later calls reconfigure it).
Result<CudaContext*> init_context(const DeviceSettings& settings);
// The context init_context made; kernels run only after a CUDA device exists.
CudaContext& context();

// Device memory from the caching allocator, for scratch space inside a kernel
// (freed back to the cache when the returned storage dies, stream-ordered).
std::shared_ptr<Storage> scratch(size_t bytes);
// Queues a host-to-device copy on the compute stream through pinned staging;
// `src` may be reused as soon as this returns.
Status upload(void* dst, const void* src, size_t bytes);

}  // namespace ort_train::cuda
