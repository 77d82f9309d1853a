// CUDA registrations of LpNormalization, MeanVarianceNormalization and their
// gradients. Kernels: cuda_kernels/lp_mvn.cu over graph/ops/lp_mvn.h's row tables.
#include "cuda_kernels/lp_mvn.h"
#include "graph/ops/lp_mvn.h"
#include "runtime/cuda/kernels/common.h"

namespace ort_train::cuda {
namespace {

Result<Tensor> on_device(KernelContext& ctx, const std::vector<int64_t>& v) {
  ASSIGN_OR_RETURN(Tensor t, temp(ctx, DType::kInt64, {static_cast<int64_t>(v.size())}));
  if (!v.empty()) RETURN_IF_ERROR(upload(t.raw(), v.data(), v.size() * sizeof(int64_t)));
  return t;
}

KernelFn normalize(bool mvn, bool grad) {
  return [mvn, grad](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(grad ? 1 : 0);
    auto t = elem_type(x.dtype());
    if (!t || !dtype_is_float(x.dtype())) return unsupported_cuda_dtype(ctx, x.dtype());
    if (grad && ctx.input(0).dims() != x.dims()) return shape_error("{}: dY and X differ in shape", ctx.node().describe());
    ASSIGN_OR_RETURN(NormalizedRows r, normalized_rows(ctx.node(), x.dims(), mvn));
    ASSIGN_OR_RETURN(Tensor base, on_device(ctx, r.base));
    ASSIGN_OR_RETURN(Tensor row, on_device(ctx, r.row));
    CUDA_OUTPUT(out, ctx, 0);
    CUDA_RETURN_IF_ERROR(launch_lp_mvn(*t, mvn, r.p, base.data<int64_t>(), static_cast<int64_t>(r.base.size()),
                                       row.data<int64_t>(), static_cast<int64_t>(r.row.size()), x.raw(),
                                       grad ? ctx.input(0).raw() : nullptr, out.raw(), stream()));
    return Status::Ok();
  };
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("LpNormalization", 1, 1000, normalize(false, false));
ORT_REGISTER_CUDA_KERNEL("MeanVarianceNormalization", 9, 1000, normalize(true, false));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "LpNormalizationGrad", 1, 1000, normalize(false, true));
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "MeanVarianceNormalizationGrad", 1, 1000, normalize(true, true));

}  // namespace ort_train::cuda
