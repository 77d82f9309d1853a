// The register layout of the tensor-core instruction
// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32 (PTX ISA,
// "Matrix Fragments for mma.m16n8k16 with floating point type"): which element
// of the 16x16 A tile (row-major), the 16x8 B tile (k x n) and the 16x8 float32
// C tile the i-th value of lane `lane` holds. A holds 8 16-bit values (4
// registers of 2, the lower half first), B 4 (2 registers), C 4 floats.
//
// Host/device: the flash attention kernel (attention_flash16.cu) reads and
// writes its tiles through these maps, and host tests check that they cover
// each tile once and compose into a matrix product, and that the kernel's
// reuse of a C tile (scores) as an A tile (probabilities) keeps every element
// in place.
#pragma once
#include "numerics/host_device.h"

namespace ort_train {

struct MmaIndex {
  int row, col;
};

// A (16 x 16): values 0,1 row g, 2,3 row g+8, 4,5 row g (cols +8), 6,7 row g+8
// (cols +8), where g = lane / 4; columns 2 (lane % 4) + (i % 2).
ORT_HOST_DEVICE MmaIndex mma_a_index(int lane, int i) {
  int group = lane >> 2, t = lane & 3, reg = i >> 1;
  return {group + ((reg & 1) ? 8 : 0), t * 2 + (i & 1) + ((reg & 2) ? 8 : 0)};
}

// B (16 x 8, k x n): values 0,1 at k = 2 (lane % 4) + (i % 2), 2,3 at k + 8;
// column n = lane / 4.
ORT_HOST_DEVICE MmaIndex mma_b_index(int lane, int i) {
  return {(lane & 3) * 2 + (i & 1) + (i >= 2 ? 8 : 0), lane >> 2};
}

// C (16 x 8, float32): values 0,1 row g, 2,3 row g+8; columns 2 (lane % 4) + (i % 2).
ORT_HOST_DEVICE MmaIndex mma_c_index(int lane, int i) {
  return {(lane >> 2) + (i >= 2 ? 8 : 0), (lane & 3) * 2 + (i & 1)};
}

// The A tile of a 16 x 16 block of a row of C tiles (C tiles 2j and 2j + 1
// side by side, 16 columns): A value i of a lane is that lane's C value
// mma_a_from_c_value(i) of C tile 2j + mma_a_from_c_tile(i). The lane keeps
// its own values: no shuffle between C (scores) and A (probabilities).
ORT_HOST_DEVICE int mma_a_from_c_tile(int i) { return (i >> 2) & 1; }
ORT_HOST_DEVICE int mma_a_from_c_value(int i) { return ((i >> 1) & 1) * 2 + (i & 1); }

}  // namespace ort_train
