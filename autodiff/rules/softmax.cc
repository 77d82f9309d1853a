// Gradient rules of Softmax and LogSoftmax: one fused op each over the
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

}  // namespace

ORT_GRADIENT("Softmax").rule(softmax_rule("SoftmaxGrad"));
ORT_GRADIENT("LogSoftmax").rule(softmax_rule("LogSoftmaxGrad"));

}  // namespace ort_train
