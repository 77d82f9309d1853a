// Gradient rules of SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss
// (labels and class weights get no gradient).
#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

std::vector<Attribute> loss_attrs(const Node& n) {
  std::vector<Attribute> out{Attribute::make_string("reduction", n.attr_string("reduction", "mean"))};
  if (const Attribute* a = n.attr("ignore_index")) out.push_back(*a);
  return out;
}

Status sce_rule(GradientContext& c) {
  // log_prob (output 1) is what the gradient needs: softmax = exp(log_prob).
  ASSIGN_OR_RETURN(auto log_prob, c.ensure_output(1));
  std::vector<std::string> g_parts;
  if (c.has_GO(0)) {
    std::vector<std::string> in{c.GO(0), log_prob, c.I(1)};
    if (c.has_input(2)) in.push_back(c.I(2));
    ASSIGN_OR_RETURN(auto g, c.add1("SoftmaxCrossEntropyLossGrad", in, loss_attrs(c.node()), kOrtTrainDomain));
    g_parts.push_back(g);
  }
  if (c.has_GO(1)) {  // log_prob is log_softmax over the class axis 1
    ASSIGN_OR_RETURN(auto g, c.add1("LogSoftmaxGrad", {c.GO(1), log_prob},
                                    {Attribute::make_int("axis", 1), Attribute::make_int("coerce_2d", 0)},
                                    kOrtTrainDomain));
    g_parts.push_back(g);
  }
  std::string g = g_parts[0];
  if (g_parts.size() > 1) {
    ASSIGN_OR_RETURN(g, c.add1("Add", g_parts));
  }
  c.set_GI(0, g);
  return Status::Ok();
}

Status nll_rule(GradientContext& c) {
  std::vector<std::string> in{c.GO(0), c.I(0), c.I(1)};
  if (c.has_input(2)) in.push_back(c.I(2));
  ASSIGN_OR_RETURN(auto g, c.add1("NegativeLogLikelihoodLossGrad", in, loss_attrs(c.node()), kOrtTrainDomain));
  c.set_GI(0, g);
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("SoftmaxCrossEntropyLoss").no_gradient_for({1, 2}).rule(sce_rule);
ORT_GRADIENT("NegativeLogLikelihoodLoss").no_gradient_for({1, 2}).rule(nll_rule);

}  // namespace ort_train
