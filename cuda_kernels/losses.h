// SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss and their gradients,
// scores [N, C, D] (D = product of the spatial dims), labels [N, D] int64 or
// int32, optional class weights [C]. A label outside [0, C) that is not the
// ignore index makes the loss NaN and is recorded at `fault`, which the device
// reports as the CPU's error after its next wait (numerics/index_fault.h); the
// gradient gives its row zeros and counts it in no mean, as the CPU does.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"
#include "numerics/index_fault.h"

namespace ort_train::cuda {

enum class LossReduction : int { kNone, kSum, kMean };

struct LossArgs {
  ElemType t = ElemType::kF32;
  const void* labels = nullptr;
  bool labels_int32 = false;
  const void* weights = nullptr;  // [C] or null
  LossReduction reduction = LossReduction::kMean;
  bool has_ignore = false;
  int64_t ignore_index = 0;
  int64_t N = 0, C = 0, D = 1;
  IndexFaultSite fault;  // the forward's; none for the gradient (the forward reported it)
};

// out: [N, D] for kNone, else a scalar. logp: log-probabilities [N, C, D].
cudaError_t launch_nll_forward(const LossArgs& a, const void* logp, void* out, cudaStream_t stream);
// dx[n,c,d] = g w(y) (softmax ? exp(ref) : 0) - [c == y]); `scratch` holds one double.
cudaError_t launch_loss_grad(const LossArgs& a, bool softmax, const void* dloss, const void* ref, void* dx,
                             double* scratch, cudaStream_t stream);

}  // namespace ort_train::cuda
