// Each step's coefficients for numerics/optimizer_math.h, computed in double
// and rounded to float once, for the CPU and the GPU optimizers alike.
#pragma once
#include <cstdint>

#include "numerics/optimizer_math.h"
#include "optimizers/optimizer.h"

namespace ort_train {

// Step t (1-based) at learning rate lr, the gradients multiplied by grad_scale.
SgdStep sgd_step(const OptimizerSettings& s, int64_t t, double lr, float grad_scale);
AdamStep adam_step(const OptimizerSettings& s, int64_t t, double lr, float grad_scale);
LambStep lamb_step(const OptimizerSettings& s, int64_t t, double lr, float grad_scale);

}  // namespace ort_train
