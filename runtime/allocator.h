// A caching allocator: freed blocks go to a free list keyed by rounded size and
// are handed out again, so a steady-state step allocates nothing from the
// system. It counts bytes in use and their peak, which is how the executor
// reports the peak memory of a run.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "graph/tensor.h"

namespace ort_train {

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::shared_ptr<Storage> allocate(size_t bytes) = 0;
  virtual size_t bytes_in_use() const = 0;
  virtual size_t peak_bytes() const = 0;
  virtual void reset_peak() = 0;
  // Number of times memory was taken from the system (not from the cache).
  virtual size_t system_allocations() const = 0;
  // Gives the cached free blocks back to the system (the executor does once it
  // has its replay arena, so the recording run's blocks are not held twice).
  virtual void release_cached() {}
};

// How a device takes memory from its system: allocate returns null when out
// of memory; before_freeing_cache (optional) runs before cached blocks are
// freed (a GPU waits for queued kernels that may still read them).
struct SystemMemory {
  std::function<void*(size_t)> allocate;
  std::function<void(void*)> free;
  std::function<void()> before_freeing_cache;
};
// Size-binned caching over `sys`. When the system is out of memory the cache
// is emptied and the request retried once; if that fails too, the storage
// has no memory (data() is null) for the caller to report.
std::shared_ptr<Allocator> make_caching_allocator(DeviceKind kind, SystemMemory sys);

// Host memory, 64-byte aligned, cached.
std::shared_ptr<Allocator> make_cpu_caching_allocator();

// Rounds a request up to its size bin (what the cache keys on).
size_t allocator_bin_size(size_t bytes);

}  // namespace ort_train
