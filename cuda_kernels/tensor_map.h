// Shared by CUDA kernels and their host-side registrations: element types the
// kernels handle, and the index maps of broadcasting and strided copies (up to
// kMaxDims dimensions), passed to kernels by value.
#pragma once
#include <cstdint>

#include "numerics/host_device.h"  // the offset functions below run in kernels and, in tests, on the host

namespace ort_train::cuda {

constexpr int kMaxDims = 8;

// kF16/kBF16 (Float16, BFloat16 in numerics/float16.h) reach only Cast so far.
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

// i / d and i % d, in 32 bits when both fit: a GPU divides 64-bit integers in
// software, tens of instructions, which made every broadcast and strided copy
// compute-bound (the quotient only shrinks, so later dims stay in 32 bits).
ORT_HOST_DEVICE void div_mod(int64_t i, int64_t d, int64_t& q, int64_t& r) {
  if ((static_cast<uint64_t>(i) | static_cast<uint64_t>(d)) <= 0xffffffffu) {
    uint32_t q32 = static_cast<uint32_t>(i) / static_cast<uint32_t>(d);
    q = q32;
    r = static_cast<int64_t>(static_cast<uint32_t>(i) - q32 * static_cast<uint32_t>(d));
  } else {
    q = i / d;
    r = i - q * d;
  }
}

// Input offset of output element i under an IndexMap. The outermost dim takes
// what is left of i undivided (i is inside the tensor).
ORT_HOST_DEVICE int64_t index_map_offset(const IndexMap& m, int64_t i) {
  if (m.rank == 0) return 0;
  int64_t off = 0;
  for (int d = m.rank - 1; d > 0; --d) {
    int64_t q, r;
    div_mod(i, m.dims[d], q, r);
    off += r * m.strides[d];
    i = q;
  }
  return off + i * m.strides[0];
}

// Offset of element i (row-major over out_dims) under a CopyMap.
ORT_HOST_DEVICE int64_t copy_map_offset(const CopyMap& m, int64_t i) {
  int64_t off = m.offset;
  for (int d = m.rank - 1; d >= 0; --d) {
    int64_t q = 0, idx = i, unused;
    if (d > 0) div_mod(i, m.out_dims[d], q, idx);
    int64_t wrapped = idx;  // mod is past every index but for Tile
    if (idx >= m.mod[d]) div_mod(idx, m.mod[d], unused, wrapped);
    off += (wrapped * m.step[d]) * m.in_strides[d];
    i = q;
  }
  return off;
}

}  // namespace ort_train::cuda
