#include "runtime/cuda/index_faults.h"

#include <cuda_runtime.h>

#include "runtime/cuda/cuda_check.h"
#include "runtime/index_fault_error.h"

namespace ort_train::cuda {

Result<std::unique_ptr<IndexFaults>> IndexFaults::create() {
  std::unique_ptr<IndexFaults> f(new IndexFaults());
  void* p = nullptr;
  CUDA_RETURN_IF_ERROR(cudaHostAlloc(&p, sizeof(IndexFault), cudaHostAllocMapped));
  f->host_ = new (p) IndexFault();
  void* d = nullptr;
  CUDA_RETURN_IF_ERROR(cudaHostGetDevicePointer(&d, p, 0));
  f->device_ = static_cast<IndexFault*>(d);
  return f;
}

IndexFaults::~IndexFaults() {
  if (host_) cudaFreeHost(host_);
}

IndexFaultSite IndexFaults::site(const std::string& node_description) {
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, added] = tags_.try_emplace(node_description, static_cast<int32_t>(nodes_.size() + 1));
  if (added) nodes_.push_back(node_description);
  return {device_, it->second};
}

Status IndexFaults::check() {
  // Called after a stream synchronization (an opaque call), so these loads
  // see the kernels' completed writes.
  if (host_->tag == 0) return Status::Ok();
  const IndexFault f = *host_;
  *host_ = IndexFault();
  std::string node = "a GPU kernel";
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (f.tag > 0 && static_cast<size_t>(f.tag) <= nodes_.size()) node = nodes_[static_cast<size_t>(f.tag) - 1];
  }
  Status st = index_fault_error(node, f);
  return Status(st.code(), st.message() + " (found on the GPU, whose kernel skipped it)");
}

}  // namespace ort_train::cuda
