// The caching allocator of every device: size-binned free lists over the
// device's own allocate/free. Only the system calls differ per device.
#include <algorithm>
#include <cstdlib>

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

class CachingAllocator : public Allocator, public std::enable_shared_from_this<CachingAllocator> {
 public:
  CachingAllocator(DeviceKind kind, SystemMemory sys) : kind_(kind), sys_(std::move(sys)) {}
  ~CachingAllocator() override { empty_cache(); }

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
      p = sys_.allocate(bin);
      if (!p) {  // out of memory: give the cached blocks back and try once more
        empty_cache();
        p = sys_.allocate(bin);
      }
      // Storage without memory: the caller reports it (cuda::output names the node).
      if (!p) return std::make_shared<Storage>(nullptr, bytes, kind_, nullptr);
      ++system_allocs_;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      in_use_ += bin;
      peak_ = std::max(peak_, in_use_);
    }
    std::weak_ptr<CachingAllocator> self = weak_from_this();
    auto sys_free = sys_.free;
    return std::make_shared<Storage>(p, bytes, kind_, [self, bin, sys_free](void* q) {
      if (auto s = self.lock()) s->release(q, bin);
      else sys_free(q);
    });
  }

  size_t bytes_in_use() const override { return in_use_; }
  size_t peak_bytes() const override { return peak_; }
  void reset_peak() override { peak_ = in_use_; }
  size_t system_allocations() const override { return system_allocs_; }
  void release_cached() override { empty_cache(); }

 private:
  void release(void* p, size_t bin) {
    std::lock_guard<std::mutex> lock(mu_);
    free_[bin].push_back(p);
    in_use_ -= bin;
  }
  void empty_cache() {
    std::lock_guard<std::mutex> lock(mu_);
    if (sys_.before_freeing_cache) sys_.before_freeing_cache();
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) sys_.free(p);
    free_.clear();
  }

  DeviceKind kind_;
  SystemMemory sys_;
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t in_use_ = 0;
  size_t peak_ = 0;
  size_t system_allocs_ = 0;
};

}  // namespace

std::shared_ptr<Allocator> make_caching_allocator(DeviceKind kind, SystemMemory sys) {
  return std::make_shared<CachingAllocator>(kind, std::move(sys));
}

std::shared_ptr<Allocator> make_cpu_caching_allocator() {
  return make_caching_allocator(DeviceKind::kCpu, {[](size_t bytes) { return std::aligned_alloc(64, bytes); },
                                                   [](void* p) { std::free(p); }, nullptr});
}

}  // namespace ort_train
