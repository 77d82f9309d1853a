// CPU kernel of com.ort_train::SumTo (shape rule in graph/ops/sum_to.cc).
#include <algorithm>
#include <vector>

#include "graph/dispatch.h"
#include "graph/ops/reduce.h"
#include "runtime/cpu/kernels/reduce.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"
#include "runtime/vector_ops.h"

namespace ort_train {
namespace {

// Whether target is x's trailing dims (with or without leading 1s): the sum
// runs over whole rows.
bool sums_leading_dims(const Dims& x, const Dims& target) {
  Dims t = target;
  while (!t.empty() && t.front() == 1) t.erase(t.begin());
  if (t.size() > x.size()) return false;
  return std::equal(t.begin(), t.end(), x.end() - static_cast<std::ptrdiff_t>(t.size()));
}

// out[j] = sum over rows r of x[r * n + j], in float32, rounded once; rows in
// order for every j, so any thread count gives the same bits.
template <typename T>
void sum_rows(const T* x, T* out, int64_t total, int64_t n) {
  int64_t rows = n == 0 ? 0 : total / n;
  parallel_for(n, 256, [&](int64_t lo, int64_t hi) {
    std::vector<float> acc(static_cast<size_t>(hi - lo), 0.f);
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + r * n;
      for (int64_t j = lo; j < hi; ++j) acc[static_cast<size_t>(j - lo)] += static_cast<float>(row[j]);
    }
    for (int64_t j = lo; j < hi; ++j) out[j] = T(acc[static_cast<size_t>(j - lo)]);
  });
}

Status sum_to(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Dims target = dims_from_shape(*ctx.shapes().output(0).shape);
  if (target == x.dims()) {
    ctx.alias_output(0, x);
    return Status::Ok();
  }
  std::vector<bool> axes = sum_to_axes(x.dims(), target);
  if (dtype_is_half(x.dtype())) {
    // Summed in float32 and rounded once (autocast's 16-bit GEMM gradients
    // over broadcast batch dims). A bias gradient sums the leading dims away:
    // read in place, column blocks in parallel.
    if (sums_leading_dims(x.dims(), target)) {
      bool ok = dispatch_half(x.dtype(), [&]<typename T>() {
        sum_rows(x.data<T>(), ctx.output(0).data<T>(), x.numel(), num_elements(target));
      });
      return ok ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
    }
    Tensor wide = Tensor::host(DType::kFloat, x.dims()), sum = Tensor::host(DType::kFloat, target);
    ASSIGN_OR_RETURN(VectorOps * ops, vector_ops(DeviceKind::kCpu));
    RETURN_IF_ERROR(ops->convert(x, wide));
    if (!sum_axes(wide, axes, sum)) return unsupported_dtype(ctx, x.dtype());
    RETURN_IF_ERROR(ops->convert(sum, ctx.output(0)));
    return Status::Ok();
  }
  return sum_axes(x, axes, ctx.output(0)) ? Status::Ok() : unsupported_dtype(ctx, x.dtype());
}

const std::vector<DType> kSumToDtypes{DType::kFloat, DType::kDouble, DType::kBFloat16, DType::kFloat16};

}  // namespace

ORT_REGISTER_KERNEL_FOR_DTYPES(kOrtTrainDomain, "SumTo", 1, 1000, DeviceKind::kCpu, sum_to, kSumToDtypes);

}  // namespace ort_train
