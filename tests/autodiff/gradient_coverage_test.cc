// The rule table drives the gradient checks: every op with a gradient rule must
// have at least one finite-difference case, and every op the runtime can run
// must either have a rule or say explicitly that it has none.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

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

// A case runs only when a TEST_CASE lists its op in check_registered: one
// registered under an op no list names would never run while the test above
// still passed. The lists are read from the test sources themselves.
TEST_CASE("gradcheck.every_registered_case_runs") {
  namespace fs = std::filesystem;
  std::set<std::string> listed;
  const std::regex call(R"(check_registered\(\{([^}]*)\}\))"), name("\"([A-Za-z0-9_]+)\"");
  for (const auto& entry : fs::directory_iterator(fs::path(source_dir()) / "tests/autodiff")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string src = text.str();
    for (std::sregex_iterator c(src.begin(), src.end(), call), end; c != end; ++c) {
      const std::string list = (*c)[1];
      for (std::sregex_iterator n(list.begin(), list.end(), name); n != end; ++n) listed.insert((*n)[1]);
    }
  }
  REQUIRE_FALSE(listed.empty());
  for (const auto& [op, c] : GradCaseRegistry::all()) {
    INFO("finite-difference case '" << c.name << "' of " << op << " runs in no check_registered list");
    CHECK(listed.count(op) == 1);
  }
}

}  // namespace ort_train::testing
