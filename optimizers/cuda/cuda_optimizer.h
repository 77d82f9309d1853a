#pragma once
#include <memory>
#include <vector>

#include "cuda_kernels/optimizers.h"
#include "optimizers/optimizer.h"

namespace ort_train::cuda {

// Sgd/Adam/AdamW/Lamb with flat state on the GPU, updating device parameters
// in place with the fused kernels of cuda_kernels/optimizers.cu.
Result<std::unique_ptr<Optimizer>> make_cuda_optimizer(const OptimizerSettings& s, std::vector<ParamSlot> params);

}  // namespace ort_train::cuda
