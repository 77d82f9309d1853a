// Shape rules and attributes of the parameterised activations (HardSigmoid,
// HardSwish, Elu, Selu, Celu, ThresholdedRelu, Shrink, Softsign, Mish), the
// trigonometric and hyperbolic functions (Tan Sinh Cosh Asin Acos Asinh Acosh
// Atanh), PRelu, and their gradient op com.ort_train ActivationGrad(dY, X).
// Each keeps its input's dtype and shape.
#include "graph/ops/activations.h"
#include "graph/operand_checks.h"

#include <string>

#include "graph/op_schema.h"

namespace ort_train {
namespace {

// Selu's defaults, as ONNX writes them (float32 of the constants in Klambauer et al.).
constexpr float kSeluAlpha = 1.67326319217681884765625f;
constexpr float kSeluGamma = 1.05070102214813232421875f;

// PRelu(X, slope): X's dtype and shape; the slope broadcasts to X one way.
Status prelu_rule(InferContext& ctx) {
  DType dt = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != dt && ctx.input_dtype(1) != DType::kUndefined && dt != DType::kUndefined)
    return shape_error("{}: the slope is {}, X {}", ctx.node().describe(), dtype_name(ctx.input_dtype(1)),
                       dtype_name(dt));
  const OptShape &x = ctx.input_shape(0), &s = ctx.input_shape(1);
  if (x && s) {
    ASSIGN_OR_RETURN(Shape out, broadcast_shapes({&*x, &*s}, ctx.node()));
    bool one_way = out.size() == x->size();
    for (size_t i = 0; one_way && i < out.size(); ++i)
      one_way = !(*x)[i].known() || !out[i].known() || out[i].value == (*x)[i].value;
    if (!one_way)
      return shape_error("{}: slope {} does not broadcast to X {}", ctx.node().describe(), shape_to_string(s),
                         shape_to_string(x));
  }
  ctx.propagate(0, 0);
  return Status::Ok();
}

}  // namespace

Result<ActivationCall> activation_call(const Node& node, std::string_view op) {
  auto f = [&](const char* name, float def) { return node.attr_float(name, def); };
  if (op == "HardSigmoid") return ActivationCall{Activation::kHardSigmoid, {f("alpha", 0.2f), f("beta", 0.5f)}};
  if (op == "HardSwish") return ActivationCall{Activation::kHardSwish, {}};
  if (op == "Elu") return ActivationCall{Activation::kElu, {f("alpha", 1.f)}};
  if (op == "Selu") return ActivationCall{Activation::kSelu, {f("alpha", kSeluAlpha), 0.f, f("gamma", kSeluGamma)}};
  if (op == "Celu") {
    float alpha = f("alpha", 1.f);
    if (alpha == 0.f) return invalid_argument("{}: Celu's alpha must not be 0", node.describe());
    return ActivationCall{Activation::kCelu, {alpha}};
  }
  if (op == "ThresholdedRelu") return ActivationCall{Activation::kThresholdedRelu, {f("alpha", 1.f)}};
  if (op == "Shrink") return ActivationCall{Activation::kShrink, {f("lambd", 0.5f), f("bias", 0.f)}};
  if (op == "Softsign") return ActivationCall{Activation::kSoftsign, {}};
  if (op == "Mish") return ActivationCall{Activation::kMish, {}};
  if (op == "Tan") return ActivationCall{Activation::kTan, {}};
  if (op == "Sinh") return ActivationCall{Activation::kSinh, {}};
  if (op == "Cosh") return ActivationCall{Activation::kCosh, {}};
  if (op == "Asin") return ActivationCall{Activation::kAsin, {}};
  if (op == "Acos") return ActivationCall{Activation::kAcos, {}};
  if (op == "Asinh") return ActivationCall{Activation::kAsinh, {}};
  if (op == "Acosh") return ActivationCall{Activation::kAcosh, {}};
  if (op == "Atanh") return ActivationCall{Activation::kAtanh, {}};
  return invalid_argument("{}: '{}' is not an activation ActivationGrad knows", node.describe(), std::string(op));
}

Result<ActivationCall> activation_grad_call(const Node& grad_node) {
  std::string op = grad_node.attr_string("activation", "");
  if (op.empty()) return invalid_argument("{}: ActivationGrad needs the 'activation' attribute", grad_node.describe());
  return activation_call(grad_node, op);
}

ORT_REGISTER_OP("", "HardSigmoid", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "HardSwish", 14, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Elu", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Selu", 6, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Celu", 12, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "ThresholdedRelu", 10, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Shrink", 9, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Softsign", 1, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Mish", 18, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Tan", 7, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Sinh", 9, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Cosh", 9, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Asin", 7, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Acos", 7, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Asinh", 9, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Acosh", 9, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "Atanh", 9, 1000, same_as_input0, kPlainOp);
ORT_REGISTER_OP("", "PRelu", 7, 1000, prelu_rule, kPlainOp);
// (dY, X) -> dX = dY * activation'(X); attribute `activation` names the forward
// op, the forward's own attributes follow it.
ORT_REGISTER_OP(kOrtTrainDomain, "ActivationGrad", 1, 1000, elementwise_grad_rule, kPlainOp);

}  // namespace ort_train
