// Shared by CUDA kernels and their host-side registrations: element types the
// kernels handle, and the index maps of broadcasting and strided copies (up to
// kMaxDims dimensions), passed to kernels by value.
#pragma once
#include <cstdint>

#include "cuda_kernels/host_device.h"  // the offset functions below run in kernels and, in tests, on the host

namespace ort_train::cuda {

constexpr int kMaxDims = 8;

// kF16/kBF16 (Float16, BFloat16 in cuda_kernels/float16.h) reach only Cast so far.
enum class ElemType : int { kF32, kF64, kI32, kI64, kBool, kF16, kBF16 };

// Output element (row-major index over `dims`) -> input offset = sum(idx[d] * strides[d]);
// a broadcast dimension has stride 0.
struct IndexMap {
  int rank = 0;
  int64_t dims[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};
};

// A strided copy: out[i] = in[offset + sum(((idx[d] % mod[d]) * step[d]) * in_strides[d])]
// over the output's dims; mod is the input's dim for Tile, else a value larger than any index.
struct CopyMap {
  int rank = 0;
  int64_t out_dims[kMaxDims] = {};
  int64_t in_strides[kMaxDims] = {};
  int64_t mod[kMaxDims] = {};
  int64_t step[kMaxDims] = {};
  int64_t offset = 0;
};

// Input offset of output element i under an IndexMap.
ORT_HOST_DEVICE int64_t index_map_offset(const IndexMap& m, int64_t i) {
  int64_t off = 0;
  for (int d = m.rank - 1; d >= 0; --d) {
    int64_t q = i / m.dims[d];
    off += (i - q * m.dims[d]) * m.strides[d];
    i = q;
  }
  return off;
}

// Offset of element i (row-major over out_dims) under a CopyMap.
ORT_HOST_DEVICE int64_t copy_map_offset(const CopyMap& m, int64_t i) {
  int64_t off = m.offset;
  for (int d = m.rank - 1; d >= 0; --d) {
    int64_t q = i / m.out_dims[d];
    int64_t idx = i - q * m.out_dims[d];
    off += ((idx % m.mod[d]) * m.step[d]) * m.in_strides[d];
    i = q;
  }
  return off;
}

}  // namespace ort_train::cuda
