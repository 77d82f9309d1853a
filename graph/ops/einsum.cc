// Einsum: equation parsing (explicit and implicit output, '...' broadcasting,
// repeated labels) and its shape rule.
#include "graph/ops/einsum.h"

#include <algorithm>
#include <map>

#include "graph/op_schema.h"

namespace ort_train {
namespace {

// Splits "ab,b...->a..." into operand terms and the output term (has_output false when implicit).
std::vector<std::string> split_terms(const std::string& lhs) {
  std::vector<std::string> out(1);
  for (char c : lhs) {
    if (c == ' ') continue;
    if (c == ',') out.emplace_back();
    else out.back() += c;
  }
  return out;
}

}  // namespace

Result<EinsumPlan> plan_einsum(const Node& node, const std::string& equation, const std::vector<Dims>& operands) {
  size_t arrow = equation.find("->");
  std::vector<std::string> terms = split_terms(equation.substr(0, arrow));
  if (terms.size() != operands.size())
    return invalid_argument("{}: equation '{}' has {} operands, the node {}", node.describe(), equation, terms.size(),
                            operands.size());
  EinsumPlan plan;
  std::map<char, int> letters;
  int64_t ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    size_t dots = terms[i].find("...");
    int64_t named = static_cast<int64_t>(terms[i].size()) - (dots == std::string::npos ? 0 : 3);
    if (dots == std::string::npos && named != static_cast<int64_t>(operands[i].size()))
      return shape_error("{}: term '{}' has {} labels for an operand of rank {}", node.describe(), terms[i], named,
                         operands[i].size());
    if (dots != std::string::npos) ellipsis_rank = std::max(ellipsis_rank, static_cast<int64_t>(operands[i].size()) - named);
  }
  // Ellipsis dims get label ids 0..ellipsis_rank-1 (right-aligned across operands).
  for (int64_t e = 0; e < ellipsis_rank; ++e) plan.label_sizes.push_back(-1);
  auto size_label = [&](int id, int64_t size, bool broadcastable) -> Status {
    int64_t& s = plan.label_sizes[static_cast<size_t>(id)];
    if (size < 0) return Status::Ok();
    if (s < 0 || (broadcastable && s == 1)) s = size;
    else if (size != s && !(broadcastable && size == 1))
      return shape_error("{}: label sizes {} and {} disagree", node.describe(), s, size);
    return Status::Ok();
  };
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& t = terms[i];
    const Dims& d = operands[i];
    std::vector<int> ids;
    size_t dim = 0;
    for (size_t p = 0; p < t.size(); ++p) {
      if (t.compare(p, 3, "...") == 0) {
        int64_t n = static_cast<int64_t>(d.size()) - (static_cast<int64_t>(t.size()) - 3);
        for (int64_t e = 0; e < n; ++e) {
          int id = static_cast<int>(ellipsis_rank - n + e);
          ids.push_back(id);
          RETURN_IF_ERROR(size_label(id, d[dim++], true));
        }
        p += 2;
        continue;
      }
      char c = t[p];
      if (!std::isalpha(static_cast<unsigned char>(c)))
        return invalid_argument("{}: bad label '{}' in '{}'", node.describe(), c, equation);
      auto it = letters.find(c);
      if (it == letters.end()) {
        it = letters.emplace(c, static_cast<int>(plan.label_sizes.size())).first;
        plan.label_sizes.push_back(-1);
      }
      ids.push_back(it->second);
      RETURN_IF_ERROR(size_label(it->second, d[dim++], false));
    }
    plan.operand_labels.push_back(ids);
  }
  if (arrow != std::string::npos) {
    std::string out = equation.substr(arrow + 2);
    for (size_t p = 0; p < out.size(); ++p) {
      if (out[p] == ' ') continue;
      if (out.compare(p, 3, "...") == 0) {
        for (int64_t e = 0; e < ellipsis_rank; ++e) plan.output_labels.push_back(static_cast<int>(e));
        p += 2;
        continue;
      }
      auto it = letters.find(out[p]);
      if (it == letters.end())
        return invalid_argument("{}: output label '{}' appears in no operand", node.describe(), out[p]);
      plan.output_labels.push_back(it->second);
    }
  } else {  // implicit: '...' then the letters used exactly once, alphabetically
    for (int64_t e = 0; e < ellipsis_rank; ++e) plan.output_labels.push_back(static_cast<int>(e));
    std::map<char, int> count;
    for (const auto& t : terms)
      for (char c : t)
        if (std::isalpha(static_cast<unsigned char>(c))) ++count[c];
    for (const auto& [c, n] : count)
      if (n == 1) plan.output_labels.push_back(letters.at(c));
  }
  // The kernel visits every combination of label values once per operand: a
  // few bytes of equation over small operands can ask for years of work.
  int64_t combinations = 1;
  for (int64_t s : plan.label_sizes) combinations = mul_saturating(combinations, std::max<int64_t>(s, 1));
  if (mul_saturating(combinations, static_cast<int64_t>(operands.size())) > kEinsumMaxProducts) {
    std::string sizes;
    for (const auto& [c, id] : letters)
      sizes += fmt::format("{}{}={}", sizes.empty() ? "" : ", ", c, plan.label_sizes[static_cast<size_t>(id)]);
    return invalid_argument(
        "{}: equation '{}' loops over {} combinations of its labels ({}) for {} operands, more than the {} the "
        "direct Einsum kernel takes on; contract the operands two at a time (MatMul, or Einsum of two)",
        node.describe(), equation, combinations, sizes, operands.size(), kEinsumMaxProducts);
  }
  return plan;
}

namespace {

Status einsum_rule(InferContext& ctx) {
  std::vector<Dims> dims;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const OptShape& s = ctx.input_shape(i);
    if (!s) {
      ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
      return Status::Ok();
    }
    Dims d;
    for (const Dim& x : *s) d.push_back(x.known() ? x.value : -1);
    dims.push_back(d);
  }
  ASSIGN_OR_RETURN(EinsumPlan plan, plan_einsum(ctx.node(), ctx.node().attr_string("equation", ""), dims));
  Shape out;
  for (int id : plan.output_labels) {
    int64_t s = plan.label_sizes[static_cast<size_t>(id)];
    out.push_back(s < 0 ? Dim() : Dim(s));
  }
  ctx.set_output(0, ctx.input_dtype(0), out);
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_OP("", "Einsum", 12, 1000, einsum_rule, kPlainOp);

}  // namespace ort_train
