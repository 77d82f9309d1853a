// The GPU's record of an index outside what it indexes (numerics/index_fault.h):
// one IndexFault in pinned host memory mapped into the device, which kernels
// write only when they skip a bad index, and the node behind each tag. The
// device reads it after every wait on its compute stream (CudaDevice), so a
// bad index costs the good path no copy and no wait.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/status.h"
#include "numerics/index_fault.h"

namespace ort_train::cuda {

class IndexFaults {
 public:
  static Result<std::unique_ptr<IndexFaults>> create();
  ~IndexFaults();
  IndexFaults(const IndexFaults&) = delete;
  IndexFaults& operator=(const IndexFaults&) = delete;

  // Where a kernel launched for the node described so records (one tag per node).
  IndexFaultSite site(const std::string& node_description);
  // Called once the stream's work is done: the error for a recorded fault
  // (cleared, so the next run starts clean), else Ok.
  Status check();

 private:
  IndexFaults() = default;
  IndexFault* host_ = nullptr;    // what the host reads
  IndexFault* device_ = nullptr;  // the same memory as kernels address it
  std::mutex mu_;
  std::vector<std::string> nodes_;  // tag t names nodes_[t - 1]
  std::unordered_map<std::string, int32_t> tags_;
};

}  // namespace ort_train::cuda
