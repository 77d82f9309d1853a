// Where MatMul's GEMMs read and write, shared by the float and bfloat16 CPU
// kernels: operand dims with numpy's promotion of 1-D operands, the
// (optionally transposed) last two dims, and the GEMMs over the broadcast
// batch: one over all of A's rows when B has no batch (the Linear-layer
// case), else one per batch entry, threaded across the batch when they are
// small (runtime/cpu/batched_gemm.h).
#pragma once
#include <cstdint>

#include "graph/tensor.h"
#include "runtime/cpu/batched_gemm.h"
#include "runtime/cpu/broadcast.h"
#include "runtime/kernel.h"

namespace ort_train {

struct MatMulGeometry {
  bool ta = false, tb = false;  // the last two dims of A (B) swapped
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0;
  Dims batch_a, batch_b;
};

inline MatMulGeometry matmul_geometry(Dims da, Dims db, bool ta, bool tb) {
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  size_t ra = da.size(), rb = db.size();
  MatMulGeometry g;
  g.ta = ta;
  g.tb = tb;
  g.m = da[ra - (ta ? 1 : 2)];
  g.k = da[ra - (ta ? 2 : 1)];
  g.n = db[rb - (tb ? 2 : 1)];
  g.lda = da[ra - 1];
  g.ldb = db[rb - 1];
  g.batch_a.assign(da.begin(), da.end() - 2);
  g.batch_b.assign(db.begin(), db.end() - 2);
  return g;
}

// FusedMatMul's optional bias (input 2): a 1-D tensor of the output's last
// dim in A's dtype. Null when the node has none.
inline Result<const Tensor*> fused_matmul_bias(KernelContext& ctx) {
  if (!ctx.has_input(2)) return static_cast<const Tensor*>(nullptr);
  const Tensor& bias = ctx.input(2);
  if (bias.dtype() != ctx.input(0).dtype() || bias.dims().size() != 1 || bias.dims()[0] != ctx.output(0).dims().back())
    return invalid_argument("{}: the bias must be a 1-D {} of the output's last dim", ctx.node().describe(),
                            dtype_name(ctx.input(0).dtype()));
  return &bias;
}

// Calls fn(rows, a_offset, b_offset, c_offset), offsets in elements, once per GEMM.
template <typename F>
void for_each_matmul_gemm(const MatMulGeometry& g, F&& fn) {
  if (num_elements(g.batch_b) == 1 && !g.ta) {  // B shared by every batch entry: one big GEMM
    fn(num_elements(g.batch_a) * g.m, int64_t{0}, int64_t{0}, int64_t{0});
    return;
  }
  Dims batch = broadcast_dims({&g.batch_a, &g.batch_b});
  auto sa = broadcast_strides(g.batch_a, batch), sb = broadcast_strides(g.batch_b, batch);
  for_each_gemm(num_elements(batch), g.m * g.n * g.k, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      int64_t rem = t, oa = 0, ob = 0;
      for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
        int64_t i = rem % batch[d];
        rem /= batch[d];
        oa += i * sa[d];
        ob += i * sb[d];
      }
      fn(g.m, oa * g.m * g.k, ob * g.k * g.n, t * g.m * g.n);
    }
  });
}

}  // namespace ort_train
