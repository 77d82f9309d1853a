// Shared by CUDA kernels and their host-side registrations: element types the
// kernels handle, and the index maps of broadcasting and strided copies (up to
// kMaxDims dimensions), passed to kernels by value.
#pragma once
#include <cstdint>

namespace ort_train::cuda {

constexpr int kMaxDims = 8;

enum class ElemType : int { kF32, kF64, kI32, kI64, kBool };

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

}  // namespace ort_train::cuda
