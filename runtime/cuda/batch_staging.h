// The next micro-batch on its way to the GPU while the current step runs: the
// trainer's prefetch thread copies each tensor into pinned memory and queues
// the upload on a copy stream of its own, into device buffers kept apart from
// the caching allocator (whose blocks are only safe on the compute stream).
// Events order the two streams:
//  - `copied`: recorded after a buffer's upload; the compute stream waits on
//    it (await) before the step's first kernel reads the batch;
//  - `released`: recorded on the compute stream when the batch's tensors die,
//    after the step's kernels that read it; the copy stream waits on it before
//    the buffer is filled again, and the host before reusing its pinned twin.
#pragma once
#include <cuda_runtime.h>

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train::cuda {

class BatchStaging : public std::enable_shared_from_this<BatchStaging> {
 public:
  static Result<std::shared_ptr<BatchStaging>> create(int device, cudaStream_t compute);
  ~BatchStaging();
  // Starts the upload of a host tensor (any thread); the result lives on the GPU.
  Result<Tensor> stage(const Tensor& host);
  // Makes the compute stream wait for a staged tensor's upload (no-op for others).
  Status await(const Tensor& t);

 private:
  struct Buffer {
    void* device = nullptr;
    void* pinned = nullptr;
    size_t bytes = 0;
    cudaEvent_t copied = nullptr;
    cudaEvent_t released = nullptr;
    bool used = false;
  };
  BatchStaging(int device, cudaStream_t compute) : device_(device), compute_(compute) {}
  void give_back(Buffer* b);

  int device_;
  cudaStream_t compute_;
  cudaStream_t copy_ = nullptr;
  std::mutex mu_;
  std::vector<std::unique_ptr<Buffer>> all_;
  std::vector<Buffer*> free_;
  std::map<const void*, cudaEvent_t> pending_;  // device pointer -> its upload's event, until awaited
};

}  // namespace ort_train::cuda
