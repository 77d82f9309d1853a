#include "runtime/attention_geometry.h"

#include "numerics/counter_random.h"

namespace ort_train {
namespace {

// Strides that read a tensor of `dims` (rank <= 4, aligned to the right) at
// each index of the [B, H, T, S] scores: 0 along a broadcast dim.
bool broadcast_strides(const Dims& dims, const int64_t (&scores)[4], int64_t (&stride)[4]) {
  if (dims.size() > 4) return false;
  int64_t step = 1;
  for (int d = 3; d >= 0; --d) {
    int64_t at = d - (4 - static_cast<int64_t>(dims.size()));
    int64_t n = at >= 0 ? dims[static_cast<size_t>(at)] : 1;
    if (n != 1 && n != scores[d]) return false;
    stride[d] = n == 1 ? 0 : step;
    step *= n;
  }
  return true;
}

}  // namespace

Result<AttentionGeometry> attention_geometry(const KernelContext& ctx, size_t q, size_t bias) {
  // The shape rule (graph/ops/attention.cc), run on these very tensors before
  // the kernel, has checked that Q, K and V are 4-D and agree, and the dtypes.
  const Node& n = ctx.node();
  const Dims &qd = ctx.input(q).dims(), &kd = ctx.input(q + 1).dims(), &vd = ctx.input(q + 2).dims();
  AttentionGeometry g;
  g.k_transposed = n.attr_int("k_transposed", 0) != 0;
  g.batch = qd[0];
  g.heads = qd[1];
  g.queries = qd[2];
  g.head_size = qd[3];
  g.kv_heads = kd[1];
  g.keys = g.k_transposed ? kd[3] : kd[2];
  g.value_size = vd[3];
  g.scale = n.attr_float("scale", 1.0f);
  int64_t scores[4] = {g.batch, g.heads, g.queries, g.keys};
  if (ctx.has_input(bias) && !broadcast_strides(ctx.input(bias).dims(), scores, g.bias_stride))
    return invalid_argument("{}: the bias {} does not broadcast to the scores", n.describe(),
                            dims_to_string(ctx.input(bias).dims()));
  if (ctx.has_input(bias + 1) && !broadcast_strides(ctx.input(bias + 1).dims(), scores, g.mask_stride))
    return invalid_argument("{}: the mask {} does not broadcast to the scores", n.describe(),
                            dims_to_string(ctx.input(bias + 1).dims()));
  g.mask_fill_when = n.attr_int("mask_fill_when", 0) != 0;
  g.mask_fill = n.attr_float("mask_fill", 0.0f);
  // runtime_training=1 (a Dropout before opset 12): drop only in a training run.
  bool training = n.attr_int("runtime_training", 0) == 0 || ctx.options().training;
  g.dropout_ratio = training ? n.attr_float("dropout_ratio", 0.0f) : 0.0f;
  if (!(g.dropout_ratio >= 0.0f && g.dropout_ratio < 1.0f))
    return invalid_argument("{}: dropout_ratio must be in [0, 1), got {}", n.describe(), g.dropout_ratio);
  // The node's seed attribute (attention_fusion sets one), the run's seed and
  // the step: the forward, its gradient and a recompute copy draw one mask.
  uint64_t attr_seed = static_cast<uint64_t>(n.attr_int("seed", 0));
  g.seed = mix64(attr_seed ^ mix64(ctx.options().seed) ^ (ctx.options().step * 0x9E3779B97F4A7C15ull));
  return g;
}

}  // namespace ort_train
