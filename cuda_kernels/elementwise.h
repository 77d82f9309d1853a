// Elementwise ops: binary with numpy broadcasting, Where, unary math and
// activations, their gradients, Cast and Clip.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"

namespace ort_train::cuda {

enum class BinaryOp : int {
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin,
  kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual,  // bool outputs
  kAnd, kOr, kXor                                          // bool inputs and outputs
};
// out (n elements, the broadcast shape) = a op b; `a_map`/`b_map` give each
// operand's offset for an output index (ignored when `same_shape`).
cudaError_t launch_binary(BinaryOp op, ElemType t, const void* a, const void* b, void* out, int64_t n, bool same_shape,
                          const IndexMap& a_map, const IndexMap& b_map, cudaStream_t stream);
// out = cond ? x : y with broadcasting (element type of x/y by size in bytes).
cudaError_t launch_where(const bool* cond, const void* x, const void* y, void* out, int element_bytes, int64_t n,
                         const IndexMap& c_map, const IndexMap& x_map, const IndexMap& y_map, cudaStream_t stream);

enum class UnaryOp : int {
  kNeg, kAbs, kExp, kLog, kSqrt, kReciprocal, kRelu, kSigmoid, kTanh, kErf, kGelu, kGeluTanh, kSoftplus,
  kSin, kCos, kAtan, kFloor, kCeil, kRound, kSign, kNot, kLeakyRelu
};
cudaError_t launch_unary(UnaryOp op, ElemType t, const void* in, void* out, int64_t n, float alpha,
                         cudaStream_t stream);
// Clip with optional device scalars for the bounds (null: unbounded on that side).
cudaError_t launch_clip(ElemType t, const void* in, void* out, int64_t n, const void* lo, const void* hi,
                        cudaStream_t stream);
cudaError_t launch_cast(ElemType from, ElemType to, const void* in, void* out, int64_t n, cudaStream_t stream);

enum class ActivationGrad : int { kRelu, kSigmoid, kTanh, kGelu, kGeluTanh, kLeakyRelu };
// dX from dY and the forward's Y (Relu, Sigmoid, Tanh) or X (Gelu, LeakyRelu).
cudaError_t launch_activation_grad(ActivationGrad op, ElemType t, const void* dy, const void* saved, void* dx,
                                   int64_t n, float alpha, cudaStream_t stream);

}  // namespace ort_train::cuda
