#include "runtime/cuda/cuda_allocator.h"

#include <cuda_runtime.h>

namespace ort_train::cuda {

std::shared_ptr<Allocator> make_cuda_caching_allocator(int device) {
  SystemMemory sys;
  sys.allocate = [device](size_t bytes) -> void* {
    void* p = nullptr;
    cudaSetDevice(device);
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();  // clear the out-of-memory error: the allocator retries or reports it
      return nullptr;
    }
    return p;
  };
  sys.free = [](void* p) { cudaFree(p); };
  sys.before_freeing_cache = [] { cudaDeviceSynchronize(); };  // queued kernels may still read cached blocks
  return make_caching_allocator(DeviceKind::kCuda, std::move(sys));
}

}  // namespace ort_train::cuda
