#include "autodiff/loss.h"

namespace ort_train {
namespace {

bool is_float(DType t) { return t == DType::kFloat || t == DType::kDouble; }

Result<std::string> reduce_all(GraphBuilder& b, const std::string& x, const std::string& reduction) {
  // With no axes both ops reduce over every axis at every opset.
  const char* op = reduction == "sum" ? "ReduceSum" : "ReduceMean";
  return b.add1(op, {x}, {Attribute::make_int("keepdims", 0)}, "", "loss");
}

// Classification losses read logits [..., C] (class axis last, as PyTorch
// users lay them out) and flatten them to the [N, C] that ONNX's loss ops take.
Result<std::string> classification_loss(GraphBuilder& b, const LossSpec& s, const char* onnx_op) {
  int64_t r = b.rank(s.input);
  if (r == 0) return shape_error("loss input '{}' is a scalar; {} needs [..., classes]", s.input, s.type);
  DType t = b.dtype(s.target);
  if (t != DType::kInt64 && t != DType::kInt32)
    return invalid_argument("loss target '{}' has dtype {}; {} needs integer class indices", s.target,
                            dtype_name(t), s.type);
  std::string logits = s.input;
  std::string target = s.target;
  if (r != 2) {
    if (r == 1) {
      ASSIGN_OR_RETURN(logits, b.unsqueeze(s.input, {0}));
    } else {
      ASSIGN_OR_RETURN(logits, b.add1("Flatten", {s.input}, {Attribute::make_int("axis", r - 1)}));
    }
    ASSIGN_OR_RETURN(target, b.add1("Reshape", {s.target, b.ints({-1})}));
  }
  if (t != DType::kInt64) { ASSIGN_OR_RETURN(target, b.add1("Cast", {target}, {Attribute::make_int("to", 7)})); }
  std::vector<Attribute> attrs{Attribute::make_string("reduction", s.reduction),
                               Attribute::make_int("ignore_index", s.ignore_index)};
  ASSIGN_OR_RETURN(auto outs, b.add(onnx_op, {logits, target}, 1, attrs, "", "loss"));
  return outs[0];
}

Result<std::string> regression_loss(GraphBuilder& b, const LossSpec& s) {
  if (b.dtype(s.target) != b.dtype(s.input))
    return invalid_argument("loss target '{}' has dtype {} but input '{}' has {}; {} needs them equal", s.target,
                            dtype_name(b.dtype(s.target)), s.input, dtype_name(b.dtype(s.input)), s.type);
  ASSIGN_OR_RETURN(std::string d, b.add1("Sub", {s.input, s.target}));
  std::string per_element;
  if (s.type == "mse") {
    ASSIGN_OR_RETURN(per_element, b.add1("Mul", {d, d}));
  } else {
    ASSIGN_OR_RETURN(per_element, b.add1("Abs", {d}));
  }
  return reduce_all(b, per_element, s.reduction);
}

// softplus(x) - x*t, PyTorch's BCEWithLogits. Softplus is one op so its
// derivative, sigmoid(x), is exact everywhere (a max/abs composition has the
// right value but a wrong derivative at x = 0, the logit of a zero-initialized layer).
Result<std::string> bce_with_logits(GraphBuilder& b, const LossSpec& s) {
  if (b.dtype(s.target) != b.dtype(s.input))
    return invalid_argument("loss target '{}' has dtype {} but input '{}' has {}; bce_with_logits needs them equal",
                            s.target, dtype_name(b.dtype(s.target)), s.input, dtype_name(b.dtype(s.input)));
  ASSIGN_OR_RETURN(std::string sp, b.add1("Softplus", {s.input}));
  ASSIGN_OR_RETURN(std::string xt, b.add1("Mul", {s.input, s.target}));
  ASSIGN_OR_RETURN(std::string per_element, b.add1("Sub", {sp, xt}));
  return reduce_all(b, per_element, s.reduction);
}

}  // namespace


Result<std::string> append_loss(GraphBuilder& b, const LossSpec& s) {
  const Graph& g = b.model().graph;
  if (s.type.empty()) {
    if (s.output.empty()) return invalid_argument("loss: give either `output` or `type`");
    if (!g.value(s.output)) return invalid_argument("loss output '{}' is not a value of the model", s.output);
    return s.output;
  }
  if (s.reduction != "mean" && s.reduction != "sum")
    return invalid_argument("loss reduction '{}' is not one of: mean, sum", s.reduction);
  if (s.input.empty() || !g.value(s.input))
    return invalid_argument("loss input '{}' is not a value of the model", s.input);
  if (s.target.empty() || !g.value(s.target))
    return invalid_argument("loss target '{}' is neither a model value nor a declared label", s.target);
  if (!is_float(b.dtype(s.input)))
    return invalid_argument("loss input '{}' has dtype {}; a floating-point tensor is needed", s.input,
                            dtype_name(b.dtype(s.input)));
  if (s.type == "softmax_cross_entropy") return classification_loss(b, s, "SoftmaxCrossEntropyLoss");
  if (s.type == "nll") return classification_loss(b, s, "NegativeLogLikelihoodLoss");
  if (s.type == "mse" || s.type == "l1") return regression_loss(b, s);
  if (s.type == "bce_with_logits") return bce_with_logits(b, s);
  return invalid_argument("loss type '{}' is not one of: {}", s.type, loss_types());
}

}  // namespace ort_train
