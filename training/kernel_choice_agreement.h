// Under mpirun every rank runs the same kernels. Kernel choices made by
// timing (runtime/kernel_choice.h) are made where a rank first meets a shape,
// and two ranks timing the same candidates on a busy machine can keep
// different ones; then their forward arithmetic differs, and so do the
// --kernel-choices files they write. Before the first step rank 0 makes the
// choices for its first micro-batch's shapes, by one forward and backward on
// it (which updates nothing), and its choices, made, loaded or forced by a
// file, replace every other rank's. A shape that rank 0's first micro-batch
// did not have is still timed by the rank that meets it. This run measures
// every choice at once, also those measured in situ elsewhere (the CPU GEMM
// library under --gemm-library measured).
#pragma once
#include <cstdint>

#include "graph/status.h"
#include "runtime/communicator.h"
#include "runtime/executor.h"
#include "training/batch_source.h"

namespace ort_train {

// A collective: every rank calls it with the step's executor. Nothing to do
// for one rank or with --deterministic (every choice pinned, nothing timed).
Status agree_kernel_choices(Executor& executor, const BatchSource& source, uint64_t seed, Communicator& comm);

}  // namespace ort_train
