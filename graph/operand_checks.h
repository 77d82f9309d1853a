// Checks a shape rule makes of its operands before the kernel trusts them.
// Kernels index one input by another's sizes (a gradient by dY's element
// count, a bias by the channel count); a model file can pair any shapes, so
// a mismatch is a shape error naming the node, not a read past a buffer.
// Each check holds where both sizes are known; at run time they always are.
#pragma once
#include <cstdint>
#include <optional>

#include "graph/op_schema.h"

namespace ort_train {

// The element count of a shape when every dim is known.
std::optional<int64_t> known_elements(const OptShape& s);

// Input `k` has input `of`'s shape (rank and every known dim).
Status require_same_shape(const InferContext& ctx, size_t k, size_t of, const char* what);
// Input `k`, when present, holds `count` elements (or, with `or_one`, a single one).
Status require_elements(const InferContext& ctx, size_t k, const Dim& count, const char* what, bool or_one = false);
// Inputs `from`.. (the present ones) share input `from`'s dtype: kernels
// read them all as that type.
Status require_same_dtype(const InferContext& ctx, size_t from);
// Input `k`, when present and known, is of dtype `want`.
Status require_dtype(const InferContext& ctx, size_t k, DType want, const char* what);
// Input `k` broadcasts (unidirectionally, numpy's rule) to `target`.
Status require_broadcasts_to(const InferContext& ctx, size_t k, const Shape& target, const char* what);

// The rule of a (dY, Y or X[, ...]) -> dX gradient op: input 1 has dY's
// shape, and dX has it too.
Status elementwise_grad_rule(InferContext& ctx);

}  // namespace ort_train
