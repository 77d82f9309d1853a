// Gradient rule of com.ort_train Attention (attention_fusion's): one fused
// AttentionGrad over Q, K, V, the output and the rows' log-sum-exp, which
// recomputes the probabilities tile by tile (runtime/cpu/kernels/attention.cc).
// The bias's gradient is the scores' gradient (dScores, of the scores' shape;
// the driver sums it to the bias's), made only when the bias trains (T5's
// position bias). The mask and the log-sum-exp output are not differentiable.
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

Status attention_rule(GradientContext& c) {
  ASSIGN_OR_RETURN(auto lse, c.ensure_output(1));
  bool bias_grad = c.has_input(3) && c.needs_GI(3);
  std::vector<std::string> inputs = {c.GO(0), c.I(0), c.I(1), c.I(2), c.O(0), lse};
  if (c.has_input(3) || c.has_input(4)) inputs.push_back(c.has_input(3) ? c.I(3) : "");
  if (c.has_input(4)) inputs.push_back(c.I(4));
  ASSIGN_OR_RETURN(auto g, c.add("AttentionGrad", std::move(inputs), bias_grad ? 4 : 3, c.node().attributes,
                                 kOrtTrainDomain));
  for (size_t i = 0; i < 3; ++i)
    if (c.needs_GI(i)) c.set_GI(i, g[i]);
  if (bias_grad) c.set_GI(3, g[3]);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT_IN_DOMAIN(kOrtTrainDomain, "Attention").no_gradient_for({4}).no_gradient_from_outputs({1}).rule(
    attention_rule);

}  // namespace ort_train
