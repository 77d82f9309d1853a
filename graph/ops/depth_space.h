// DepthToSpace and SpaceToDepth as one 6-D permuted view of the input: the
// output's dims and, per output dim, the input stride it walks. The CPU
// kernel hands the view to strided_copy, the CUDA kernel to a gather copy.
#pragma once
#include <array>

#include "graph/graph.h"
#include "graph/tensor.h"

namespace ort_train {

struct DepthSpaceView {
  Dims dims;                         // 6-D, row-major over the output
  std::vector<int64_t> src_strides;  // per dim of `dims`, in input elements
  Dims out_dims;                     // the op's 4-D output
};

// `to_depth`: SpaceToDepth; else DepthToSpace. `crd`: the CRD layout (the
// channel index outside the block index), else DCR. SpaceToDepth with
// `crd` is com.ort_train's: the exact inverse of DepthToSpace CRD, which no
// ONNX op is (DepthToSpace's gradient).
Result<DepthSpaceView> depth_space_view(const Dims& in, int64_t block, bool to_depth, bool crd, const Node& node);

// The node's mode: DepthToSpace's `mode` (DCR by default) or com.ort_train
// SpaceToDepth's; ONNX's SpaceToDepth is DCR.
Result<bool> depth_space_is_crd(const Node& node);

}  // namespace ort_train
