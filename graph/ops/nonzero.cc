// Shape rule of NonZero: the [rank, N] int64 coordinates of X's nonzero
// elements in row-major order. N depends on the data: known when X's value
// is (at run time, or for a constant), else a dim of its own.
#include "graph/dispatch.h"
#include "graph/op_schema.h"

namespace ort_train {
namespace {

Status nonzero_rule(InferContext& ctx) {
  const OptShape& x = ctx.input_shape(0);
  Dim rank = x ? Dim(static_cast<int64_t>(x->size())) : Dim();
  const Tensor* v = ctx.input_value(0);
  if (!v) {
    ctx.set_output(0, DType::kInt64, Shape{rank, Dim()});
    return Status::Ok();
  }
  int64_t n = 0;
  bool ok = dispatch_all(v->dtype(), [&]<typename T>() {
    const T* p = v->data<T>();
    for (int64_t i = 0; i < v->numel(); ++i) n += p[i] != T(0);
  });
  if (!ok) return unsupported("{}: NonZero of {} is not supported", ctx.node().describe(), dtype_name(v->dtype()));
  ctx.set_output(0, DType::kInt64, Shape{Dim(static_cast<int64_t>(v->rank())), Dim(n)});
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "NonZero", 9, 1000, nonzero_rule, kRuleReadsInput(0));

}  // namespace ort_train
