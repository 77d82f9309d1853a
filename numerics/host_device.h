// ORT_HOST_DEVICE marks a function that runs in CUDA kernels and on the host
// (the GPU's arithmetic, so host tests can check it against the CPU kernels).
// Header-only, no dependencies: CUDA kernel files include it too.
#pragma once

#ifdef __CUDACC__
#define ORT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define ORT_HOST_DEVICE inline
#endif
