#include "runtime/cuda/cuda_allocator.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <vector>

namespace ort_train::cuda {
namespace {

class CudaCachingAllocator : public Allocator, public std::enable_shared_from_this<CudaCachingAllocator> {
 public:
  explicit CudaCachingAllocator(int device) : device_(device) {}
  ~CudaCachingAllocator() override { empty_cache(); }

  std::shared_ptr<Storage> allocate(size_t bytes) override {
    size_t bin = allocator_bin_size(bytes);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(bin);
      if (it != free_.end() && !it->second.empty()) {
        p = it->second.back();
        it->second.pop_back();
      }
    }
    if (!p) {
      cudaSetDevice(device_);
      if (cudaMalloc(&p, bin) != cudaSuccess) {
        cudaGetLastError();  // clear the out-of-memory error, give cached blocks back, retry once
        empty_cache();
        if (cudaMalloc(&p, bin) != cudaSuccess) {
          cudaGetLastError();
          // Storage without memory: kernels check their outputs (cuda_kernel.h) and report it.
          return std::make_shared<Storage>(nullptr, bytes, DeviceKind::kCuda, nullptr);
        }
      }
      ++system_allocs_;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_use_ += bin;
      peak_ = std::max(peak_, in_use_);
    }
    std::weak_ptr<CudaCachingAllocator> self = weak_from_this();
    return std::make_shared<Storage>(p, bytes, DeviceKind::kCuda, [self, bin](void* q) {
      if (auto s = self.lock()) s->release(q, bin);
      else cudaFree(q);
    });
  }

  size_t bytes_in_use() const override { return in_use_; }
  size_t peak_bytes() const override { return peak_; }
  void reset_peak() override { peak_ = in_use_; }
  size_t system_allocations() const override { return system_allocs_; }

 private:
  void release(void* p, size_t bin) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[bin].push_back(p);
    in_use_ -= bin;
  }
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    cudaDeviceSynchronize();  // queued kernels may still read cached blocks
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) cudaFree(p);
    free_.clear();
  }

  int device_;
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t in_use_ = 0;
  size_t peak_ = 0;
  size_t system_allocs_ = 0;
};

}  // namespace

std::shared_ptr<Allocator> make_cuda_caching_allocator(int device) {
  return std::make_shared<CudaCachingAllocator>(device);
}

}  // namespace ort_train::cuda
