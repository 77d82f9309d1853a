// How CUDA kernels walk tensors: the index maps of broadcasting, reductions
// and copies (Transpose, Expand, Tile, Slice, Concat/Split views, Pad's
// interior), built on the host. Kept apart from the launches so tests check
// them on the CPU against the CPU kernels (tests/runtime/cuda/index_maps_test.cc).
#pragma once
#include <vector>

#include "cuda_kernels/pooling.h"
#include "cuda_kernels/tensor_map.h"
#include "graph/graph.h"
#include "graph/ops/slice.h"
#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train::cuda {

Dims row_major_strides(const Dims& dims);
// Where output index i of `out` reads `in` (numpy broadcasting, right-aligned).
Result<IndexMap> broadcast_map(const Dims& in, const Dims& out);

// A reduction of `dims` over the flagged axes: output o reads
// in[index_map_offset(kept, o) + index_map_offset(reduced, r)] for r < count.
struct ReduceMaps {
  IndexMap kept, reduced;
  int64_t count = 1;
};
Result<ReduceMaps> reduce_maps(const Dims& dims, const std::vector<bool>& reduced);

// dims walked row-major; element offset `offset` + sum(idx * strides).
Result<CopyMap> strided_map(const Dims& dims, const Dims& strides, int64_t offset);
Result<CopyMap> transpose_map(const Dims& in, std::vector<int64_t> perm, const Dims& out);
Result<CopyMap> expand_map(const Dims& in, const Dims& out);
Result<CopyMap> tile_map(const Dims& in, const Dims& out);
// The slice `r` of a tensor with `dims`, walked over `slice_dims`.
Result<CopyMap> slice_map(const std::vector<SliceAxis>& r, const Dims& dims, const Dims& slice_dims);
// A part of `part_dims` at `offset` along `axis` of a tensor with `whole_dims` (Concat, Split).
Result<CopyMap> axis_map(const Dims& part_dims, const Dims& whole_dims, int64_t axis, int64_t offset);

// Pad (constant mode, negative pads crop): the input block that survives,
// where it sits in the input and where it goes in the output.
struct PadInterior {
  bool empty = false;  // nothing of the input survives
  Dims part;
  CopyMap in_view, out_view;
};
Result<PadInterior> pad_interior(const Dims& in, const Dims& out, const std::vector<int64_t>& pads);

// A pooling node's window over X (0 to 3 spatial dims, padded in front to 3).
Result<PoolGeometry> pool_geometry(const Node& node, const Dims& x_dims);

}  // namespace ort_train::cuda
