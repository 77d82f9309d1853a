// The index arithmetic of OneHot and ReverseSequence, shared by the CPU and
// CUDA kernels.
#pragma once
#include <cstdint>

#include "numerics/host_device.h"

namespace ort_train {

// OneHot: the hot position of `index` among `depth` (negative counts from the
// end), or -1 when it is out of range (the row stays all off, as ONNX says).
ORT_HOST_DEVICE int64_t one_hot_position(int64_t index, int64_t depth) {
  if (index < 0) index += depth;
  return index >= 0 && index < depth ? index : -1;
}

// ReverseSequence: the time position element t of a sequence of length `len`
// reads (the first len positions reversed, the rest copied).
ORT_HOST_DEVICE int64_t reversed_time(int64_t t, int64_t len) { return t < len ? len - 1 - t : t; }

}  // namespace ort_train
