// What CUDA devices this process can use. Compiled only when nvcc is present;
// everything else in ort_train builds and runs without it.
#pragma once
#include <string>

namespace ort_train::cuda {

// Number of usable GPUs (0 when the driver is missing or no device is visible).
int device_count();
// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)" or the CUDA error text.
std::string device_description(int index);

}  // namespace ort_train::cuda
