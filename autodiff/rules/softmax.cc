// Gradient rules of Softmax, LogSoftmax and com.ort_train BiasSoftmax: one fused op each over the
// forward's output, with the forward's axis semantics spelled out (the
// com.ort_train ops do not depend on the model's opset).
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

std::function<Status(GradientContext&)> softmax_rule(const char* grad_op) {
  return [grad_op](GradientContext& c) -> Status {
    bool old = c.opset() < 13;
    int64_t axis = c.node().attr_int("axis", old ? 1 : -1);
    ASSIGN_OR_RETURN(auto g, c.add1(grad_op, {c.GO(0), c.O(0)},
                                    {Attribute::make_int("axis", axis), Attribute::make_int("coerce_2d", old)},
                                    kOrtTrainDomain));
    c.set_GI(0, g);
    return Status::Ok();
  };
}

// BiasSoftmax(X, B) = Softmax(X + B) over the last axis: the gradient of the
// sum is Softmax's, for X and (summed by the driver to B's shape) for B.
Status bias_softmax_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto g, c.add1("SoftmaxGrad", {c.GO(0), c.O(0)},
                                  {Attribute::make_int("axis", -1), Attribute::make_int("coerce_2d", 0)},
                                  kOrtTrainDomain));
  for (size_t i = 0; i < 2; ++i)
    if (c.needs_GI(i)) c.set_GI(i, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT_IN_DOMAIN(kOrtTrainDomain, "BiasSoftmax").rule(bias_softmax_rule);
ORT_GRADIENT("Softmax").rule(softmax_rule("SoftmaxGrad"));
ORT_GRADIENT("LogSoftmax").rule(softmax_rule("LogSoftmaxGrad"));

}  // namespace ort_train
