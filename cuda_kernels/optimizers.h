// Fused multi-tensor optimizer kernels: every parameter of the model in one
// launch (LAMB: three), over a chunk table built once when the optimizer is
// made. The per-element arithmetic is numerics/optimizer_math.h, which the
// CPU optimizers run too, with the same coefficients rounded on the host.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "numerics/optimizer_math.h"

namespace ort_train::cuda {

constexpr int64_t kOptimizerChunk = 16384;  // elements per chunk (one block each)

// Device arrays describing all parameters; chunks of one parameter are contiguous.
struct MultiTensorTable {
  float* const* params = nullptr;     // [n]
  const float* const* grads = nullptr;  // [n], rewritten every step
  const int64_t* offsets = nullptr;   // [n] start of each parameter in the flat state
  const float* decay = nullptr;       // [n] weight decay of each parameter (0 for no_decay ones)
  const int32_t* chunk_param = nullptr;  // [chunks]
  const int64_t* chunk_begin = nullptr;  // [chunks]
  const int64_t* chunk_end = nullptr;    // [chunks]
  const int32_t* first_chunk = nullptr;  // [n + 1] chunk range of each parameter
  int64_t chunks = 0;
  int64_t params_count = 0;
};

// Each kernel's arguments: the step's coefficients (numerics/optimizer_math.h,
// the arithmetic the CPU optimizers run too) and the state buffers.
struct SgdArgs {
  SgdStep c;
  float* momentum_buffer;  // null without momentum
};
cudaError_t launch_sgd(const MultiTensorTable& t, const SgdArgs& a, cudaStream_t stream);

struct AdamArgs {
  AdamStep c;
  float* m;
  float* v;
};
cudaError_t launch_adam(const MultiTensorTable& t, const AdamArgs& a, cudaStream_t stream);

struct LambArgs {
  LambStep c;
  float* m;
  float* v;
  float* r;                // update direction, flat like m
  double* partials;        // [2 * chunks]: sum w^2, sum r^2 per chunk
  double* ratios;          // [n]
};
cudaError_t launch_lamb(const MultiTensorTable& t, const LambArgs& a, cudaStream_t stream);

}  // namespace ort_train::cuda
