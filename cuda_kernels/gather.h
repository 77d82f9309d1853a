// Gather along an axis ([outer, n, inner] data, m indices) and its gradient,
// the scatter-add of dY rows back to their indices. The deterministic gradient
// sorts (index, position) pairs (stable radix sort) and lets one thread sum
// each index's rows in position order, as the CPU does; the fast one adds with
// atomics. An index outside [-n, n) gathers NaN (floats) or 0 and is skipped
// by the gradient; either records it at `fault` (numerics/index_fault.h), which
// the device reports as the CPU's error after its next wait.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda_kernels/tensor_map.h"
#include "numerics/index_fault.h"

namespace ort_train::cuda {

cudaError_t launch_gather(const void* data, int element_bytes, bool is_float, const void* indices, bool indices_int32,
                          void* out, int64_t outer, int64_t n, int64_t m, int64_t inner, IndexFaultSite fault,
                          cudaStream_t stream);

// Scratch bytes launch_gather_grad needs for m indices (deterministic mode).
size_t gather_grad_scratch_bytes(int64_t m);
// dx ([outer, n, inner]) must be zeroed by the caller.
cudaError_t launch_gather_grad(ElemType t, const void* dy, const void* indices, bool indices_int32, void* dx,
                               int64_t outer, int64_t n, int64_t m, int64_t inner, bool deterministic, void* scratch,
                               size_t scratch_bytes, IndexFaultSite fault, cudaStream_t stream);

}  // namespace ort_train::cuda
