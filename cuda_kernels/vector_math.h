// Float32 vector math for the training loop (gradient accumulation, scaling,
// the global gradient norm). Launchers queue on `stream` and return the
// launch's cudaError_t.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

namespace ort_train::cuda {

cudaError_t launch_add_into(float* acc, const float* x, int64_t n, cudaStream_t stream);
// acc += float(x) for a 16-bit float x: binary16 when `bfloat16` is false.
cudaError_t launch_add_into_widened(float* acc, const void* x, bool bfloat16, int64_t n, cudaStream_t stream);
cudaError_t launch_scale(float* x, float s, int64_t n, cudaStream_t stream);
// Sum of squares of `count` tensors (pointers and sizes in device memory),
// reduced in a fixed order into *out (device double): bit-identical run to run.
// `partials` must hold at least sum_squares_partials(count) doubles.
int64_t sum_squares_partials(int64_t count);
cudaError_t launch_sum_squares(const float* const* ptrs, const int64_t* sizes, int64_t count, double* partials,
                               double* out, cudaStream_t stream);
cudaError_t launch_fill(void* dst, int64_t n, int element_bytes, const void* value, cudaStream_t stream);

}  // namespace ort_train::cuda
