// Gradient rule of Einsum: the gradient of operand i is another Einsum, of dY
// and the other operands, producing operand i's subscripts. Letters of operand
// i that appear nowhere else (summed out only from it) are added back by
// broadcasting; '...' stays '...' so broadcast batch dims reduce in the driver.
#include <algorithm>
#include <numeric>

#include "autodiff/gradient_rule.h"

namespace ort_train {
namespace {

// Operand terms split on ',' with spaces removed; each '...' becomes the single
// token '.' so a term is a sequence of one-character labels.
std::vector<std::string> terms_of(const std::string& s) {
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ' ') continue;
    if (s.compare(i, 3, "...") == 0) {
      clean += '.';
      i += 2;
      continue;
    }
    clean += s[i];
  }
  std::vector<std::string> out(1);
  for (char ch : clean) {
    if (ch == ',') out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

std::string spell(const std::string& term) {
  std::string out;
  for (char ch : term) out += ch == '.' ? std::string("...") : std::string(1, ch);
  return out;
}

Status einsum_rule(GradientContext& c) {
  std::string eq = c.node().attr_string("equation", "");
  size_t arrow = eq.find("->");
  std::vector<std::string> ins = terms_of(eq.substr(0, arrow));
  std::string out;
  if (arrow != std::string::npos) {
    out = terms_of(eq.substr(arrow + 2))[0];
  } else {  // implicit output: '...' then the letters used once, sorted
    std::string letters;
    bool ellipsis = false;
    for (const auto& t : ins)
      for (char ch : t) {
        if (ch == '.') ellipsis = true;
        else letters += ch;
      }
    std::string once;
    for (char ch : letters)
      if (std::count(letters.begin(), letters.end(), ch) == 1) once += ch;
    std::sort(once.begin(), once.end());
    out = (ellipsis ? "." : "") + once;
  }
  if (ins.size() != c.num_inputs()) return c.unsupported_case("equation '{}' does not match the input count", eq);
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!c.needs_GI(i)) continue;
    const std::string& mine = ins[i];
    for (char ch : mine)
      if (ch != '.' && std::count(mine.begin(), mine.end(), ch) > 1)
        return c.unsupported_case("operand {} repeats the label '{}' (a diagonal)", i, ch);
    std::string available = out;
    std::vector<std::string> inputs{c.GO(0)};
    std::string lhs = spell(out);
    for (size_t j = 0; j < ins.size(); ++j) {
      if (j == i) continue;
      available += ins[j];
      inputs.push_back(c.I(j));
      lhs += "," + spell(ins[j]);
    }
    std::string kept;
    std::vector<int64_t> missing_axes;
    for (size_t k = 0; k < mine.size(); ++k) {
      if (mine[k] == '.' || available.find(mine[k]) != std::string::npos) kept += mine[k];
      else missing_axes.push_back(static_cast<int64_t>(k));
    }
    if (!missing_axes.empty() && mine.find('.') != std::string::npos)
      return c.unsupported_case("operand {} sums out a label of its own next to '...'", i);
    ASSIGN_OR_RETURN(auto g, c.add1("Einsum", inputs, {Attribute::make_string("equation", lhs + "->" + spell(kept))}));
    if (!missing_axes.empty()) {
      ASSIGN_OR_RETURN(g, c.builder().unsqueeze(g, missing_axes));
      ASSIGN_OR_RETURN(auto shape, c.builder().shape_of(c.I(i)));
      ASSIGN_OR_RETURN(g, c.add1("Expand", {g, shape}));
    }
    c.set_GI(i, g);
  }
  return Status::Ok();
}

}  // namespace

ORT_GRADIENT("Einsum").rule(einsum_rule);

}  // namespace ort_train
