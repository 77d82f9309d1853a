#include "runtime/cuda/pinned_staging.h"

#include <cstring>

#include "runtime/cuda/cuda_check.h"

namespace ort_train::cuda {

PinnedStaging::~PinnedStaging() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (used_[i]) cudaEventSynchronize(done_[i]);
    cudaEventDestroy(done_[i]);
    cudaFreeHost(slots_[i]);
  }
}

Status PinnedStaging::upload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes > kSlotBytes) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    return Status::Ok();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (slots_.empty()) {  // pinned memory is taken on first use only
    for (int i = 0; i < kSlots; ++i) {
      void* p = nullptr;
      cudaEvent_t e = nullptr;
      CUDA_RETURN_IF_ERROR(cudaHostAlloc(&p, kSlotBytes, cudaHostAllocDefault));
      CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      slots_.push_back(static_cast<char*>(p));
      done_.push_back(e);
      used_.push_back(false);
    }
  }
  int i = next_;
  next_ = (next_ + 1) % kSlots;
  if (used_[static_cast<size_t>(i)]) CUDA_RETURN_IF_ERROR(cudaEventSynchronize(done_[static_cast<size_t>(i)]));
  std::memcpy(slots_[static_cast<size_t>(i)], src, bytes);
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, slots_[static_cast<size_t>(i)], bytes, cudaMemcpyHostToDevice, stream));
  CUDA_RETURN_IF_ERROR(cudaEventRecord(done_[static_cast<size_t>(i)], stream));
  used_[static_cast<size_t>(i)] = true;
  return Status::Ok();
}

}  // namespace ort_train::cuda
