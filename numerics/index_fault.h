// An index read from data that lies outside what it indexes: Gather's and
// GatherGrad's indices, a loss's labels, MaxPoolGrad's positions. The CPU
// kernels return the error at once. A GPU kernel cannot stop the run, so it
// skips the index (no read or write outside its operand) and records the
// first such index in an IndexFault that lives in host memory mapped into the
// device; the device turns it into the same error after the next wait on its
// stream (reading the loss, a fetch), with no copy or wait of its own.
// runtime/index_fault_error.h words the message for both.
#pragma once
#include <cstdint>

#include "numerics/host_device.h"

namespace ort_train {

enum class IndexFaultKind : int32_t {
  kAxisIndex = 1,   // value outside [-high, high) on an axis of size high (Gather, GatherGrad)
  kLabel = 2,       // label value outside [0, high) classes
  kPlaneIndex = 3,  // MaxPoolGrad: value at `position` outside its plane of X [low, high)
};

struct IndexFault {
  int32_t tag = 0;  // 0: nothing recorded; else the site that recorded it (IndexFaultSite::tag)
  int32_t kind = 0;
  int64_t value = 0, position = 0, low = 0, high = 0;
};

// Where a GPU kernel records a bad index: the device's mapped IndexFault and
// the tag naming the node that launched it (host side: runtime/cuda/index_faults.h).
struct IndexFaultSite {
  IndexFault* fault = nullptr;
  int32_t tag = 0;
};

// Negative indices count from the end of the axis; -1 marks one outside [-n, n).
ORT_HOST_DEVICE int64_t wrap_axis_index(int64_t k, int64_t n) {
  if (k < -n || k >= n) return -1;
  return k < 0 ? k + n : k;
}

#ifdef __CUDACC__
// The first fault of the run wins; the others are skipped without a record.
__device__ __forceinline__ void report_index_fault(const IndexFaultSite& site, IndexFaultKind kind, int64_t value,
                                                   int64_t position, int64_t low, int64_t high) {
  if (!site.fault || atomicCAS(&site.fault->tag, 0, site.tag) != 0) return;
  site.fault->kind = static_cast<int32_t>(kind);
  site.fault->value = value;
  site.fault->position = position;
  site.fault->low = low;
  site.fault->high = high;
}
#endif

}  // namespace ort_train
