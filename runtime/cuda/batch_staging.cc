#include "runtime/cuda/batch_staging.h"

#include <algorithm>
#include <cstring>

#include "runtime/cuda/cuda_check.h"

namespace ort_train::cuda {

Result<std::shared_ptr<BatchStaging>> BatchStaging::create(int device, cudaStream_t compute) {
  std::shared_ptr<BatchStaging> s(new BatchStaging(device, compute));
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s->copy_, cudaStreamNonBlocking));
  return s;
}

BatchStaging::~BatchStaging() {
  if (copy_) cudaStreamSynchronize(copy_);
  for (auto& b : all_) {
    if (b->used) cudaEventSynchronize(b->released);
    cudaEventDestroy(b->copied);
    cudaEventDestroy(b->released);
    cudaFree(b->device);
    cudaFreeHost(b->pinned);
  }
  if (copy_) cudaStreamDestroy(copy_);
}

Result<Tensor> BatchStaging::stage(const Tensor& host) {
  if (host.device() != DeviceKind::kCpu) return host;
  size_t n = host.nbytes();
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));  // the prefetch thread's current device
  Buffer* b = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < free_.size(); ++i)
      if (free_[i]->bytes >= n && (!b || free_[i]->bytes < b->bytes)) b = free_[i];
    if (b) free_.erase(std::find(free_.begin(), free_.end(), b));
  }
  if (!b) {
    auto fresh = std::make_unique<Buffer>();
    fresh->bytes = std::max<size_t>(n, 256);
    CUDA_RETURN_IF_ERROR(cudaMalloc(&fresh->device, fresh->bytes));
    CUDA_RETURN_IF_ERROR(cudaHostAlloc(&fresh->pinned, fresh->bytes, cudaHostAllocDefault));
    CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&fresh->copied, cudaEventDisableTiming));
    CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&fresh->released, cudaEventDisableTiming));
    b = fresh.get();
    std::lock_guard<std::mutex> lock(mu_);
    all_.push_back(std::move(fresh));
  }
  if (b->used) {
    // The last step that read this buffer is done with it (device), and so is its last upload (pinned twin).
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(copy_, b->released, 0));
    CUDA_RETURN_IF_ERROR(cudaEventSynchronize(b->copied));
  }
  if (n) std::memcpy(b->pinned, host.raw(), n);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(b->device, b->pinned, n, cudaMemcpyHostToDevice, copy_));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(b->copied, copy_));
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_[b->device] = b->copied;
  }
  std::weak_ptr<BatchStaging> self = weak_from_this();
  auto storage = std::make_shared<Storage>(b->device, n, DeviceKind::kCuda, [self, b](void*) {
    if (auto s = self.lock()) s->give_back(b);
  });
  return Tensor(host.dtype(), host.dims(), std::move(storage));
}

void BatchStaging::give_back(Buffer* b) {
  // Recorded when the batch's last tensor dies: after every kernel of its step was queued.
  cudaEventRecord(b->released, compute_);
  std::lock_guard<std::mutex> lock(mu_);
  b->used = true;
  pending_.erase(b->device);
  free_.push_back(b);
}

Status BatchStaging::await(const Tensor& t) {
  cudaEvent_t ev = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find(t.raw());
    if (it == pending_.end()) return Status::Ok();
    ev = it->second;
    pending_.erase(it);
  }
  CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(compute_, ev, 0));
  return Status::Ok();
}

}  // namespace ort_train::cuda
