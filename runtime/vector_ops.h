// The vector arithmetic the training loop applies to whole buffers (float32,
// with float16/bfloat16 converted at the edges)
// wherever they live: accumulating a micro-batch's gradient into its slot,
// scaling (averaging, clipping, unscaling fp16's loss scale) and the global L2 norm. Arithmetic is not the
// Device's business (a Device is memory, copies and ordering), so each device
// kind registers its VectorOps beside its kernels: the CPU's in
// runtime/cpu/cpu_vector_ops.cc, the GPU's in the CUDA plugin.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train {

// Elements per partial sum of the CPU's global norm: small, because ZeRO-2's
// share boundaries fall on them (ParameterStore::shard) and should stay near
// an even split.
inline constexpr int64_t kNormChunk = 4096;

class VectorOps {
 public:
  virtual ~VectorOps() = default;
  // acc += x: acc float32; x float32, or float16/bfloat16 widened to float
  // (a 16-bit gradient summed into its float32 master gradient).
  virtual Status add_into(const Tensor& acc, const Tensor& x) = 0;
  // dst = src, between float32 and float16/bfloat16 either way (same element
  // count), rounding to nearest even: master weights to the model's 16-bit
  // parameters, 16-bit gradients to their float32 master gradients.
  virtual Status convert(const Tensor& src, const Tensor& dst) = 0;
  // sqrt(sum of squares) over all tensors, accumulated in double, the same for any thread count.
  virtual Result<double> global_norm(const std::vector<Tensor>& ts) = 0;
  // global_norm in parts (the CPU's): the sum of squares of each kNormChunk
  // elements of each tensor from its start, in order; global_norm's square
  // is their sum in that order. ZeRO-2 adds up the ranks' chunks with them,
  // so its norm is zero 0's to the bit.
  virtual Result<std::vector<double>> norm_partials(const std::vector<Tensor>& ts);
};

// The vector ops of a device kind (its plugin must be loaded: get_device first).
Result<VectorOps*> vector_ops(DeviceKind kind);

struct VectorOpsRegistrar {
  VectorOpsRegistrar(DeviceKind kind, std::function<VectorOps*()> get);
};

}  // namespace ort_train
