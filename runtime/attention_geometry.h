// The geometry of one com.ort_train Attention or AttentionGrad node at run
// time (sizes from its Q, K, V tensors, broadcast strides of its bias and
// mask, attributes, this step's dropout seed), for the CPU and CUDA kernels.
#pragma once
#include "cuda_kernels/attention.h"
#include "runtime/kernel.h"

namespace ort_train {

// `q`: the index of the Q input (K and V follow); `bias`: the index of the
// bias input (the mask follows): 0 and 3 for Attention, 1 and 6 for
// AttentionGrad. The shape rule has checked the operands; this fails only on
// a bad dropout_ratio or a bias or mask that does not broadcast.
Result<AttentionGeometry> attention_geometry(const KernelContext& ctx, size_t q, size_t bias);

}  // namespace ort_train
