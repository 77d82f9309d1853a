// The tensor-core instruction the flash attention kernels issue, how its
// 16-bit operands are packed, and the tile products built on it: mma.sync.aligned.m16n8k16.row.col with bfloat16
// or float16 A and B and float32 C (tile layouts: mma_fragments.h). Device
// code only (sm_80 and later; nothing is issued below that).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda_kernels/mma_fragments.h"
#include "numerics/float16.h"

namespace ort_train {

// Two 16-bit values in one register, the first in the low half.
__device__ __forceinline__ uint32_t pack16x2(uint16_t lo, uint16_t hi) {
  return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// c += a b for one m16n8k16 tile.
template <typename H>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same<H, BFloat16>::value) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
#endif
}

// The tile products both flash attention kernels are made of. One warp holds
// 16 rows of a [rows, D] operand as D / 16 A tiles; shared-memory tiles hold
// the 16-bit values' bits, N rows of D.

// Rows row0 .. row0 + 15 of `base` ([rows, D]) as A tiles; rows past `limit` read 0.
template <typename H, int D>
__device__ __forceinline__ void load_a_rows(const H* base, int64_t row0, int64_t limit, int lane,
                                            uint32_t (&a)[D / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      MmaIndex at = mma_a_index(lane, 2 * r);
      int64_t row = row0 + at.row;
      int d = kk * 16 + at.col;
      a[kk][r] = row < limit ? pack16x2(base[row * D + d].bits, base[row * D + d + 1].bits) : 0u;
    }
}

// c (16 x N as N / 8 C tiles) = A (16 x D) times tile^T: B(k = d, n = row) = tile[row][d].
template <typename H, int D, int N>
__device__ __forceinline__ void rows_times_tile_t(const uint32_t (&a)[D / 16][4], const uint16_t (*tile)[D],
                                                  int lane, float (&c)[N / 8][4]) {
#pragma unroll
  for (int nb = 0; nb < N / 8; ++nb)
#pragma unroll
    for (int i = 0; i < 4; ++i) c[nb][i] = 0.f;
  const MmaIndex bi = mma_b_index(lane, 0);
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
#pragma unroll
    for (int nb = 0; nb < N / 8; ++nb) {
      const uint16_t* row = tile[nb * 8 + bi.col];
      int d = kk * 16 + bi.row;
      mma16816<H>(c[nb], a[kk], pack16x2(row[d], row[d + 1]), pack16x2(row[d + 8], row[d + 9]));
    }
}

// acc (16 x D as D / 8 C tiles) += A (one 16 x 16 A tile) times rows row0 ..
// row0 + 15 of a shared tile: B(k = row, n = d) = tile[row0 + k][d].
template <typename H, int D>
__device__ __forceinline__ void a_times_tile_rows(const uint32_t (&a)[4], const uint16_t (*tile)[D], int row0,
                                                  int lane, float (&acc)[D / 8][4]) {
  const MmaIndex bi = mma_b_index(lane, 0);
  const int row = row0 + bi.row;
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd) {
    int d = nd * 8 + bi.col;
    mma16816<H>(acc[nd], a, pack16x2(tile[row][d], tile[row + 1][d]), pack16x2(tile[row + 8][d], tile[row + 9][d]));
  }
}

// acc (16 x D as D / 8 C tiles) += round(p) times tile: p is 16 x N as C
// tiles, read in place as A tiles (rounded to H); B(k = row, n = d) = tile[row][d].
template <typename H, int D, int N>
__device__ __forceinline__ void c_tiles_times_tile(const float (&p)[N / 8][4], const uint16_t (*tile)[D], int lane,
                                                   float (&acc)[D / 8][4]) {
#pragma unroll
  for (int j = 0; j < N / 16; ++j) {
    uint32_t a[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      int t = 2 * j + mma_a_from_c_tile(2 * r), cv = mma_a_from_c_value(2 * r);
      a[r] = pack16x2(H(p[t][cv]).bits, H(p[t][cv + 1]).bits);
    }
    a_times_tile_rows<H, D>(a, tile, j * 16, lane, acc);
  }
}

// Rows row0 .. row0 + 15 of `base` ([rows, D]) from C tiles acc, each row's
// values times its factor (rows g and g + 8 of the tile: factor[0], [1]),
// rounded to H; rows past `limit` are not written.
template <typename H, int D>
__device__ __forceinline__ void store_c_rows(const float (&acc)[D / 8][4], const float (&factor)[2], H* base,
                                             int64_t row0, int64_t limit, int lane) {
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      MmaIndex c = mma_c_index(lane, i);
      int64_t row = row0 + c.row;
      if (row < limit) base[row * D + nd * 8 + c.col] = H(acc[nd][i] * factor[i >> 1]);
    }
}

// Whether this GPU can run the kernels that use it (sm_80 or later).
inline cudaError_t require_sm80() {
  int device = 0, major = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (e != cudaSuccess) return e;
  return major < 8 ? cudaErrorInvalidDeviceFunction : cudaSuccess;
}

}  // namespace ort_train
