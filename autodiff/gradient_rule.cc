#include "autodiff/gradient_rule.h"

#include <algorithm>

namespace ort_train {

Result<std::string> GradientContext::GO_or_zeros(size_t i) {
  if (has_GO(i)) return GO(i);
  ASSIGN_OR_RETURN(std::string out, ensure_output(i));
  return b_.zeros_like(out);
}

Result<std::string> GradientContext::ensure_output(size_t i) {
  if (i < node_.outputs.size() && !node_.outputs[i].empty()) return node_.outputs[i];
  Node& n = b_.model().graph.nodes[node_index_];
  if (n.outputs.size() <= i) n.outputs.resize(i + 1);
  n.outputs[i] = b_.fresh_name(n.name + "_out" + std::to_string(i));
  RETURN_IF_ERROR(b_.reinfer(n));
  node_ = n;
  if (go_.size() <= i) go_.resize(i + 1);
  return node_.outputs[i];
}

Status GradientContext::as_training_form(const std::string& op_type) {
  Node& n = b_.model().graph.nodes[node_index_];
  if (b_.model().opset(kOrtTrainDomain) == 0) b_.model().opset_imports.push_back({kOrtTrainDomain, 1});
  n.op_type = op_type;
  n.domain = kOrtTrainDomain;
  RETURN_IF_ERROR(b_.reinfer(n));
  node_ = n;
  return Status::Ok();
}

bool GradientRule::differentiable_input(size_t i) const {
  return kind == GradientKind::kRule &&
         std::find(no_gradient_inputs.begin(), no_gradient_inputs.end(), i) == no_gradient_inputs.end();
}

bool GradientRule::differentiable_output(size_t i) const {
  return std::find(no_gradient_outputs.begin(), no_gradient_outputs.end(), i) == no_gradient_outputs.end();
}

GradientRegistry& GradientRegistry::instance() {
  static GradientRegistry r;
  return r;
}

void GradientRegistry::add(GradientRule rule) { rules_.push_back(std::make_unique<GradientRule>(std::move(rule))); }

const GradientRule* GradientRegistry::find(const std::string& domain, const std::string& op_type) const {
  for (const auto& r : rules_)
    if (r->domain == domain && r->op_type == op_type) return r.get();
  return nullptr;
}

std::vector<const GradientRule*> GradientRegistry::all() const {
  std::vector<const GradientRule*> out;
  for (const auto& r : rules_) out.push_back(r.get());
  return out;
}

int GradientRuleBuilder::rule(std::function<Status(GradientContext&)> fn) {
  rule_.kind = GradientKind::kRule;
  rule_.build = std::move(fn);
  GradientRegistry::instance().add(std::move(rule_));
  return 0;
}

int GradientRuleBuilder::zero() {
  rule_.kind = GradientKind::kZero;
  GradientRegistry::instance().add(std::move(rule_));
  return 0;
}

int GradientRuleBuilder::not_differentiable() {
  rule_.kind = GradientKind::kNotDifferentiable;
  GradientRegistry::instance().add(std::move(rule_));
  return 0;
}

}  // namespace ort_train
