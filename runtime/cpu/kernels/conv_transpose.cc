// CPU kernel of ConvTranspose, the adjoint of Conv: per (image, group),
// col = W_g^T @ X_g (a GEMM), then col2im scatters the columns into the output
// over the geometry of the Conv that maps the output back to the input.
#include <cstring>

#include "graph/dispatch.h"
#include "graph/ops/conv_transpose.h"
#include "runtime/cpu/batched_gemm.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/im2col.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status conv_transpose(KernelContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  Tensor& Y = ctx.output(0);
  ASSIGN_OR_RETURN(int64_t group, conv_group(ctx.node()));
  if (X.rank() < 3 || W.rank() != X.rank() || W.dims()[0] != X.dims()[1] || X.dims()[1] % group != 0)
    return shape_error("{}: X {} and W {} (group {}) are not one transposed convolution's", ctx.node().describe(),
                       dims_to_string(X.dims()), dims_to_string(W.dims()), group);
  int64_t N = X.dims()[0], C = X.dims()[1];
  int64_t Mg = W.dims()[1], M = Mg * group, Cg = C / group;
  std::vector<int64_t> spatial(X.dims().begin() + 2, X.dims().end());
  std::vector<int64_t> kernel(W.dims().begin() + 2, W.dims().end());
  ASSIGN_OR_RETURN(auto geo, conv_transpose_geometry(ctx.node(), spatial, kernel));
  // Every tap: a tap that lands wholly outside the output adds nothing there.
  const ColumnGeometry cg = column_geometry(geo, false);
  const int64_t K = cg.window, P = cg.positions /* input positions */, S = cg.image /* output positions */;
  if (Y.numel() == 0) return Status::Ok();
  bool ok = dispatch_float(X.dtype(), [&]<typename T>() {
    const T* x = X.data<T>();
    const T* w = W.data<T>();
    T* y = Y.data<T>();
    for_each_gemm(N * group, Mg * K * P * Cg, [&](int64_t first, int64_t last) {
      std::vector<T> col(static_cast<size_t>(Mg * K * P));
      for (int64_t t = first; t < last; ++t) {
        int64_t n = t / group, g = t % group;
        const T* xg = x + (n * C + g * Cg) * P;
        const T* wg = w + g * Cg * Mg * K;  // [Cg, Mg*K]
        gemm(true, false, Mg * K, P, Cg, T(1), wg, Mg * K, xg, P, T(0), col.data(), P);
        col2im(col.data(), P, 1, Mg, cg, y + (n * M + g * Mg) * S, 0);
      }
    });
    if (ctx.has_input(2)) {
      const T* b = ctx.input(2).data<T>();
      parallel_for(N * M, 1, [&](int64_t s, int64_t e) {
        for (int64_t t = s; t < e; ++t)
          for (int64_t p = 0; p < S; ++p) y[t * S + p] += b[t % M];
      });
    }
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, X.dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("ConvTranspose", 1, 1000, conv_transpose);

}  // namespace ort_train
