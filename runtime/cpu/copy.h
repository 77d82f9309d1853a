// Data movement shared by the layout kernels (Transpose, Concat, Split, Slice,
// Pad, Tile, Expand, ConstantOfShape). Work is in bytes of one element so one
// routine serves every dtype.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/tensor.h"

namespace ort_train {

// Row-major strides (in elements) of contiguous dims.
std::vector<int64_t> contiguous_strides(const Dims& dims);

// dst[i...] = src[i...] over `dims`, each side addressed by its own element strides
// (negative strides walk backwards, 0 repeats a source element). Innermost runs that
// are contiguous on both sides become memcpy; when the destination's inner run reads
// the source with a stride while another dim reads it contiguously (a transpose),
// the copy goes tile by tile so both sides stay in cache.
void strided_copy(size_t elem_size, const Dims& dims, const void* src, const std::vector<int64_t>& src_strides,
                  void* dst, const std::vector<int64_t>& dst_strides);

// dst[0..n) = one element `value` of elem_size bytes.
void fill_elements(size_t elem_size, void* dst, int64_t n, const void* value);

// out[i0,i1,...] = src[t0[i0], t1[i1], ...] where tables[d][i] is the source index along
// dim d (every entry in range). Output is contiguous.
void gather_by_tables(size_t elem_size, const Dims& out_dims, const std::vector<std::vector<int64_t>>& tables,
                      const void* src, const Dims& src_dims, void* dst);

}  // namespace ort_train
