// Shape rules of the activation gradient ops (com.ort_train domain), each
// (dY, Y or X [, attributes]) -> dX with dY's dtype and shape. Kernels in
// runtime/cpu/kernels/activation_grad.cc; schemas in docs/gradient_ops.md.
#include "graph/op_schema.h"

namespace ort_train {

ORT_REGISTER_OP(kOrtTrainDomain, "ReluGrad", 1, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "SigmoidGrad", 1, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "TanhGrad", 1, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "GeluGrad", 1, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "BiasGeluGrad", 1, 1000, same_as_input0, kPlainOp);  // (dY, X, B): GeluGrad at X + B
ORT_REGISTER_OP(kOrtTrainDomain, "SiluGrad", 1, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP(kOrtTrainDomain, "LeakyReluGrad", 1, 1000, same_as_input0, kPlainOp);

}  // namespace ort_train
