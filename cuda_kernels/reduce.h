// Reductions over any set of axes (ReduceSum ... ReduceLogSumExp, SumTo).
// Deterministic: each output is accumulated by one thread, or by one block in
// a fixed tree order; floating-point sums accumulate in double.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

enum class ReduceOp : int { kSum, kMean, kMax, kMin, kProd, kSumSquare, kL1, kL2, kLogSumExp };

// out[o] = reduce over r of in[kept(o) + reduced(r)]; `outputs` elements, `count` reduced each.
cudaError_t launch_reduce(ReduceOp op, ElemType t, const void* in, void* out, int64_t outputs, int64_t count,
                          const IndexMap& kept, const IndexMap& reduced, cudaStream_t stream);

}  // namespace ort_train::cuda
