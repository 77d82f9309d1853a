// Host-to-device copies through pinned memory. A copy from pageable memory may
// make the driver wait for the stream before staging it, which would stall the
// host in the middle of a step each time the executor uploads a small host
// value or a batch; copied first into a slot of a pinned ring, the upload is
// truly asynchronous. A slot is reused only after its previous copy finished
// (its event); with 32 slots that wait practically never happens.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <vector>

#include "graph/status.h"

namespace ort_train::cuda {

class PinnedStaging {
 public:
  static constexpr size_t kSlotBytes = size_t{1} << 20;
  static constexpr int kSlots = 32;
  ~PinnedStaging();
  // Queues dst <- src (host, `bytes`) on `stream`; larger copies go directly from pageable memory.
  Status upload(void* dst, const void* src, size_t bytes, cudaStream_t stream);

 private:
  std::mutex mu_;
  std::vector<char*> slots_;
  std::vector<cudaEvent_t> done_;
  std::vector<bool> used_;
  int next_ = 0;
};

}  // namespace ort_train::cuda
