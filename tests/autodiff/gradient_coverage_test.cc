// The rule table drives the gradient checks: every op with a gradient rule must
// have at least one finite-difference case, and every op the runtime can run
// must either have a rule or say explicitly that it has none.
#include <set>

#include "autodiff/gradient_check.h"
#include "autodiff/gradient_rule.h"

namespace ort_train::testing {

TEST_CASE("gradcheck.every_rule_has_a_case") {
  std::set<std::string> with_cases;
  for (const auto& [op, c] : GradCaseRegistry::all()) with_cases.insert(op);
  for (const GradientRule* r : GradientRegistry::instance().all()) {
    if (r->kind != GradientKind::kRule) continue;
    INFO("gradient rule of " << r->op_type << " has no finite-difference case (tests/autodiff/*_test.cc)");
    CHECK(with_cases.count(r->op_type) == 1);
  }
}

TEST_CASE("gradcheck.every_op_declares_its_gradient") {
  std::set<std::string> missing;
  for (const OpSchema* s : OpRegistry::instance().all()) {
    // The project's own (gradient) ops are not differentiated; "test.*" ops exist only in tests.
    if (s->domain == kOrtTrainDomain || s->domain.rfind("test.", 0) == 0) continue;
    if (!GradientRegistry::instance().find(s->domain, s->op_type)) missing.insert(s->op_type);
  }
  std::string list;
  for (const auto& m : missing) list += " " + m;
  INFO("ops without a gradient rule or an explicit zero/none mark:" << list);
  CHECK(missing.empty());
}

}  // namespace ort_train::testing
