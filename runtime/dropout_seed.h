// The seed of a Dropout node's mask (and of a random op's draw) for this run,
// shared by the CPU and CUDA kernels so both draw the same values: the node's `seed` attribute advanced by
// the run's step, or, without one, a seed unique to the node and step.
#pragma once
#include <cstdint>

#include "runtime/kernel.h"

namespace ort_train {

uint64_t dropout_seed(const KernelContext& ctx);

}  // namespace ort_train
