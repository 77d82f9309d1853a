// The two numbers every forward+backward reports, read one way everywhere:
// the trainer's steps and evaluations, and `train`'s first pass (--repeat,
// --profile, --dump-gradients).
#pragma once
#include <vector>

#include "graph/tensor.h"
#include "runtime/device.h"

namespace ort_train {

// The scalar loss as a double, whatever its float dtype and device.
Result<double> loss_value(Device& device, const Tensor& loss);
// Several losses (a step's micro-batches'), read to the host together: one
// device synchronization however many there are.
Result<std::vector<double>> loss_values(Device& device, const std::vector<Tensor>& losses);

// The global L2 norm of `grads` (any float dtypes, on `device`), accumulated
// in double: the device's VectorOps::global_norm for float32 tensors (the
// same for any thread count), element by element for the others.
Result<double> gradient_norm(Device& device, const std::vector<Tensor>& grads);

}  // namespace ort_train
