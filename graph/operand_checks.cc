#include "graph/operand_checks.h"

namespace ort_train {

std::optional<int64_t> known_elements(const OptShape& s) {
  if (!s || !shape_fully_known(*s)) return std::nullopt;
  return num_elements(dims_from_shape(*s));  // saturates: a count that large matches nothing
}

Status require_same_shape(const InferContext& ctx, size_t k, size_t of, const char* what) {
  const OptShape& a = ctx.input_shape(k);
  const OptShape& b = ctx.input_shape(of);
  if (!a || !b) return Status::Ok();
  bool differs = a->size() != b->size();
  for (size_t i = 0; !differs && i < a->size(); ++i)
    differs = (*a)[i].known() && (*b)[i].known() && (*a)[i].value != (*b)[i].value;
  if (differs)
    return shape_error("{}: {} must have the shape of input {} ({}), not {}", ctx.node().describe(), what, of,
                       shape_to_string(b), shape_to_string(a));
  return Status::Ok();
}

Status require_elements(const InferContext& ctx, size_t k, const Dim& count, const char* what, bool or_one) {
  if (!ctx.has_input(k) || !count.known()) return Status::Ok();
  std::optional<int64_t> n = known_elements(ctx.input_shape(k));
  if (!n || *n == count.value || (or_one && *n == 1)) return Status::Ok();
  return shape_error("{}: {} must hold {}{} elements, not {} ({})", ctx.node().describe(), what, count.value,
                     or_one ? " (or 1)" : "", *n, shape_to_string(ctx.input_shape(k)));
}

Status require_same_dtype(const InferContext& ctx, size_t from) {
  const DType first = ctx.input_dtype(from);
  for (size_t i = from + 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && first != DType::kUndefined && ctx.input_dtype(i) != DType::kUndefined &&
        ctx.input_dtype(i) != first)
      return shape_error("{}: input {} is {} but input {} is {}", ctx.node().describe(), i,
                         dtype_name(ctx.input_dtype(i)), from, dtype_name(first));
  return Status::Ok();
}

Status require_dtype(const InferContext& ctx, size_t k, DType want, const char* what) {
  DType got = ctx.input_dtype(k);
  if (!ctx.has_input(k) || got == DType::kUndefined || got == want) return Status::Ok();
  return shape_error("{}: {} must be {}, not {}", ctx.node().describe(), what, dtype_name(want), dtype_name(got));
}

Status require_broadcasts_to(const InferContext& ctx, size_t k, const Shape& target, const char* what) {
  const OptShape& s = ctx.input_shape(k);
  if (!ctx.has_input(k) || !s) return Status::Ok();
  bool fits = s->size() <= target.size();
  for (size_t i = 0; fits && i < s->size(); ++i) {
    const Dim& d = (*s)[s->size() - 1 - i];
    const Dim& t = target[target.size() - 1 - i];
    fits = !d.known() || !t.known() || d.value == 1 || d.value == t.value;
  }
  if (!fits)
    return shape_error("{}: {} of shape {} does not broadcast to {}", ctx.node().describe(), what, shape_to_string(s),
                       shape_to_string(OptShape(target)));
  return Status::Ok();
}

Status elementwise_grad_rule(InferContext& ctx) {
  RETURN_IF_ERROR(require_same_shape(ctx, 1, 0, "its second input"));
  ctx.propagate(0, 0);
  return Status::Ok();
}

}  // namespace ort_train
