// ArgMax/ArgMin's comparison, shared by the CPU and CUDA kernels: whether the
// element `v` at a later index replaces the best so far. NaN counts as the
// extreme of both (numpy's and PyTorch's argmax/argmin pick the first NaN);
// ties keep the first index unless select_last_index.
#pragma once
#include "numerics/host_device.h"

namespace ort_train {

template <typename T>
ORT_HOST_DEVICE bool arg_reduce_replaces(T v, T best, bool is_max, bool select_last) {
  bool v_nan = v != v, best_nan = best != best;
  if (best_nan) return v_nan && select_last;
  if (v_nan) return true;
  if (v == best) return select_last;
  return is_max ? v > best : v < best;
}

}  // namespace ort_train
