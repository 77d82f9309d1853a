#include "runtime/cuda/kernels/index_maps.h"

#include <limits>

#include "graph/ops/window_geometry.h"

namespace ort_train::cuda {
namespace {

constexpr int64_t kNoWrap = std::numeric_limits<int64_t>::max();

Status check_rank(size_t rank) {
  if (rank > static_cast<size_t>(kMaxDims))
    return unsupported("CUDA kernels handle up to {} dimensions, got {}", kMaxDims, rank);
  return Status::Ok();
}

}  // namespace

Dims row_major_strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) s[d] = s[d + 1] * dims[d + 1];
  return s;
}

namespace {

// Appends a dim walked with `stride` to m. Unit dims drop out and a dim
// contiguous with the previous one merges into it, so kernels divide less.
void append_merged(IndexMap& m, int64_t dim, int64_t stride) {
  if (dim == 1) return;
  if (m.rank > 0 && m.strides[m.rank - 1] == stride * dim) {
    m.dims[m.rank - 1] *= dim;
    m.strides[m.rank - 1] = stride;
    return;
  }
  m.dims[m.rank] = dim;
  m.strides[m.rank] = stride;
  ++m.rank;
}

}  // namespace

Result<IndexMap> broadcast_map(const Dims& in, const Dims& out) {
  RETURN_IF_ERROR(check_rank(out.size()));
  if (in.size() > out.size()) return shape_error("cannot broadcast {} to {}", dims_to_string(in), dims_to_string(out));
  IndexMap m;
  Dims in_strides = row_major_strides(in);
  size_t lead = out.size() - in.size();
  // A same-shape operand becomes one dim of stride 1, a scalar one of stride 0.
  for (size_t d = 0; d < out.size(); ++d)
    append_merged(m, out[d], d >= lead && in[d - lead] != 1 ? in_strides[d - lead] : 0);
  return m;
}

Result<ReduceMaps> reduce_maps(const Dims& dims, const std::vector<bool>& reduced) {
  RETURN_IF_ERROR(check_rank(dims.size()));
  Dims strides = row_major_strides(dims);
  ReduceMaps r;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d]) {
      append_merged(r.reduced, dims[d], strides[d]);
      r.count *= dims[d];
    } else {
      append_merged(r.kept, dims[d], strides[d]);
    }
  }
  return r;
}

Result<CopyMap> strided_map(const Dims& dims, const Dims& strides, int64_t offset) {
  RETURN_IF_ERROR(check_rank(dims.size()));
  CopyMap m;
  m.rank = static_cast<int>(dims.size());
  m.offset = offset;
  for (size_t d = 0; d < dims.size(); ++d) {
    m.out_dims[d] = dims[d];
    m.in_strides[d] = strides[d];
    m.mod[d] = kNoWrap;
    m.step[d] = 1;
  }
  return m;
}

Result<CopyMap> transpose_map(const Dims& in, std::vector<int64_t> perm, const Dims& out) {
  int64_t rank = static_cast<int64_t>(in.size());
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != rank) return shape_error("perm has {} entries for rank {}", perm.size(), rank);
  Dims xs = row_major_strides(in), src(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) src[d] = xs[static_cast<size_t>(perm[d] < 0 ? perm[d] + rank : perm[d])];
  return strided_map(out, src, 0);
}

Result<CopyMap> expand_map(const Dims& in, const Dims& out) {
  ASSIGN_OR_RETURN(IndexMap b, broadcast_map(in, out));
  return strided_map(Dims(b.dims, b.dims + b.rank), Dims(b.strides, b.strides + b.rank), 0);  // merged dims
}

Result<CopyMap> tile_map(const Dims& in, const Dims& out) {
  if (in.size() != out.size()) return shape_error("Tile keeps the rank: {} vs {}", dims_to_string(in), dims_to_string(out));
  ASSIGN_OR_RETURN(CopyMap m, strided_map(out, row_major_strides(in), 0));
  for (size_t d = 0; d < in.size(); ++d) m.mod[d] = in[d];
  return m;
}

Result<CopyMap> slice_map(const std::vector<SliceAxis>& r, const Dims& dims, const Dims& slice_dims) {
  Dims strides = row_major_strides(dims), src;
  int64_t offset = 0;
  for (size_t d = 0; d < r.size(); ++d) {
    offset += r[d].start * strides[d];
    src.push_back(strides[d] * r[d].step);
  }
  return strided_map(slice_dims, src, offset);
}

Result<CopyMap> axis_map(const Dims& part_dims, const Dims& whole_dims, int64_t axis, int64_t offset) {
  Dims ws = row_major_strides(whole_dims);
  return strided_map(part_dims, ws, offset * ws[static_cast<size_t>(axis)]);
}

Result<PadInterior> pad_interior(const Dims& in, const Dims& out, const std::vector<int64_t>& pads) {
  int64_t rank = static_cast<int64_t>(in.size());
  if (pads.size() != 2 * static_cast<size_t>(rank))
    return invalid_argument("pads has {} values for rank {}", pads.size(), rank);
  PadInterior p;
  Dims os = row_major_strides(out), xs = row_major_strides(in);
  int64_t out_offset = 0, in_offset = 0;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t begin = pads[static_cast<size_t>(d)], end = pads[static_cast<size_t>(d + rank)];
    int64_t skip = begin < 0 ? -begin : 0;
    int64_t keep = in[static_cast<size_t>(d)] - skip - (end < 0 ? -end : 0);
    if (keep <= 0) {
      p.empty = true;
      return p;
    }
    p.part.push_back(keep);
    out_offset += (begin > 0 ? begin : 0) * os[static_cast<size_t>(d)];
    in_offset += skip * xs[static_cast<size_t>(d)];
  }
  ASSIGN_OR_RETURN(p.in_view, strided_map(p.part, xs, in_offset));
  ASSIGN_OR_RETURN(p.out_view, strided_map(p.part, os, out_offset));
  return p;
}

Result<PoolGeometry> pool_geometry(const Node& node, const Dims& x_dims) {
  if (x_dims.size() < 2 || x_dims.size() > 5)
    return unsupported("{}: the CUDA kernel takes 0 to 3 spatial dims, got input rank {}", node.describe(),
                       x_dims.size());
  std::vector<int64_t> spatial(x_dims.begin() + 2, x_dims.end());
  ASSIGN_OR_RETURN(auto geo, window_geometry(node, spatial, node.attr_ints("kernel_shape"), true));
  PoolGeometry g{};
  size_t lead = 3 - geo.size();
  for (size_t d = 0; d < 3; ++d) {
    WindowDim w;  // unit dim in front of the real ones
    w.in = w.out = 1;
    if (d >= lead) w = geo[d - lead];
    g.in[d] = w.in;
    g.kernel[d] = w.kernel;
    g.stride[d] = w.stride;
    g.dilation[d] = w.dilation;
    g.pad_begin[d] = w.pad_begin;
    g.pad_end[d] = w.pad_end;
    g.out[d] = w.out;
  }
  return g;
}

}  // namespace ort_train::cuda
