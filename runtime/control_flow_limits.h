// Limits of the control-flow kernels (runtime/cpu/kernels/control_flow.cc)
// that a caller may tighten: the fuzz target runs hostile files' Loops with
// a few trips, not the default's millions.
#pragma once
#include <cstdint>

namespace ort_train {

// The most trips a Loop may run before it stops with an error (default 2^24).
int64_t& max_loop_trips();

}  // namespace ort_train
