#pragma once
#include <memory>
#include <vector>

#include "cuda_kernels/optimizers.h"
#include "optimizers/optimizer.h"

namespace ort_train::cuda {

// Sgd/Adam/AdamW/Lamb with flat state on the GPU, updating device parameters
// in place with the fused kernels of cuda_kernels/optimizers.cu.
Result<std::unique_ptr<Optimizer>> make_cuda_optimizer(const OptimizerSettings& s, std::vector<ParamSlot> params);

// The kernels' scalar arguments for step t (1-based) at learning rate lr:
// coefficients computed in double and rounded once, as the CPU optimizer does.
// State pointers are left null for the caller.
SgdArgs sgd_args(const OptimizerSettings& s, int64_t t, double lr);
AdamArgs adam_args(const OptimizerSettings& s, int64_t t, double lr);
LambArgs lamb_args(const OptimizerSettings& s, int64_t t, double lr);

}  // namespace ort_train::cuda
