// Shape rules of ONNX's training operators (domain ai.onnx.preview.training,
// version 1): Adagrad, Adam and Momentum return updated copies of their tensor
// inputs (X..., then the state tensors), Gradient returns one gradient per x.
// Kernels in runtime/cpu/kernels/onnx_training.cc; Gradient is replaced by the
// autodiff builder before running (autodiff/gradient_op.cc).
#include "graph/op_schema.h"

namespace ort_train {
namespace {

constexpr const char* kDomain = "ai.onnx.preview.training";

// Output k takes the dtype and shape of input 2 + k (after R and T).
Status updated_copies(InferContext& ctx) {
  for (size_t k = 0; k < ctx.num_outputs(); ++k) {
    if (!ctx.has_input(2 + k)) return shape_error("{}: too few inputs for its outputs", ctx.node().describe());
    ctx.propagate(2 + k, k);
  }
  return Status::Ok();
}

Status gradient_rule(InferContext& ctx) {
  for (size_t k = 0; k < ctx.num_outputs(); ++k) {
    if (!ctx.has_input(k)) return shape_error("{}: no input for gradient output {}", ctx.node().describe(), k);
    ctx.propagate(k, k);
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP(kDomain, "Adagrad", 1, 1, updated_copies, kTrainingStateOp);
ORT_REGISTER_OP(kDomain, "Adam", 1, 1, updated_copies, kTrainingStateOp);
ORT_REGISTER_OP(kDomain, "Momentum", 1, 1, updated_copies, kTrainingStateOp);
ORT_REGISTER_OP(kDomain, "Gradient", 1, 1, gradient_rule, kTrainingStateOp);

}  // namespace ort_train
