#include <cstdlib>
#include <cstring>

#include "runtime/allocator.h"

namespace ort_train {

size_t allocator_bin_size(size_t bytes) {
  // Small blocks round to 256 B; larger ones to 1/8 of their power of two, so
  // reuse across slightly different sizes wastes at most ~12%.
  if (bytes <= 4096) return (bytes + 255) / 256 * 256 + (bytes == 0 ? 256 : 0);
  size_t p = 1;
  while (p < bytes) p <<= 1;
  size_t step = p / 8;
  return (bytes + step - 1) / step * step;
}

namespace {

class CpuCachingAllocator : public Allocator, public std::enable_shared_from_this<CpuCachingAllocator> {
 public:
  ~CpuCachingAllocator() override {
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) std::free(p);
  }

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
      in_use_ += bin;
      peak_ = std::max(peak_, in_use_);
    }
    if (!p) {
      p = std::aligned_alloc(64, bin);
      ++system_allocs_;
    }
    std::weak_ptr<CpuCachingAllocator> self = weak_from_this();
    return std::make_shared<Storage>(p, bytes, DeviceKind::kCpu, [self, bin](void* q) {
      if (auto s = self.lock()) {
        s->release(q, bin);
      } else {
        std::free(q);
      }
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

  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t in_use_ = 0;
  size_t peak_ = 0;
  size_t system_allocs_ = 0;
};

}  // namespace

std::shared_ptr<Allocator> make_cpu_caching_allocator() { return std::make_shared<CpuCachingAllocator>(); }

}  // namespace ort_train
