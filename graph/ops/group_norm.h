// InstanceNormalization and GroupNormalization as one computation: X [N, C,
// spatial...] viewed as rows (n, group) of C/G channels times the spatial
// size, each normalized by its own mean and biased variance, then a scale and
// bias per channel (InstanceNormalization; GroupNormalization from opset 21)
// or per group (GroupNormalization 18-20, as that opset's spec says).
#pragma once
#include "graph/graph.h"
#include "graph/tensor.h"

namespace ort_train {

struct GroupNormGeometry {
  int64_t batch = 0, groups = 0, channels = 0, spatial = 1;
  float epsilon = 1e-5f;
  bool affine_per_group = false;
  int64_t channels_per_group() const { return channels / groups; }
  int64_t row_size() const { return channels_per_group() * spatial; }
  int64_t affine_size() const { return affine_per_group ? groups : channels; }
};

// For the forward node or its com.ort_train GroupNormGrad (which carries
// `num_groups` (0: one per channel), `epsilon` and `affine_per_group`).
Result<GroupNormGeometry> group_norm_geometry(const Node& node, int64_t opset, const Dims& x);

}  // namespace ort_train
