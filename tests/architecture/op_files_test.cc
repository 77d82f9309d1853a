// docs/op_files.md says, for every registered op, which files register its
// shape rule, its CPU kernel and its gradient rule: the table is made here from
// the registrations themselves (each records the __FILE__ it was registered
// in), so "where is Softmax's kernel?" has one answer that cannot go stale.
// When the registrations change, the test fails, writes the new table beside
// the test binary's working directory and says how to take it.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "autodiff/gradient_rule.h"
#include "graph/op_schema.h"
#include "runtime/kernel.h"
#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

// A registration's file relative to the repository. Its __FILE__ is the
// path the compiler was given, which may be another clone's (an object file
// ccache kept from it): its longest tail that names a file here.
std::string relative(const std::string& file) {
  for (size_t at = 0; at != std::string::npos; at = file.find('/', at + 1)) {
    std::string tail = file.substr(at == 0 && file[0] != '/' ? 0 : at + 1);
    if (!tail.empty() && fs::is_regular_file(fs::path(source_dir()) / tail)) return tail;
  }
  return file;
}

std::string joined(const std::set<std::string>& files) {
  if (files.empty()) return "-";
  std::string out;
  for (const std::string& f : files) out += (out.empty() ? "`" : ", `") + f + "`";
  return out;
}

struct OpFiles {
  std::set<std::string> rule, cpu, gradient;
  std::string has_gradient = "no";  // yes (a rule), zero, not differentiable, or no rule at all
};

std::map<std::string, OpFiles> op_files() {
  std::map<std::string, OpFiles> ops;  // "domain::Op" (ai.onnx ops by name alone)
  auto key = [](const std::string& domain, const std::string& op) {
    return domain.empty() || domain == "ai.onnx" ? op : domain + "::" + op;
  };
  // What the tests themselves register (example ops of their own) is not the project's.
  auto projects = [](const std::string& file) { return !file.empty() && relative(file).rfind("tests/", 0) != 0; };
  for (const OpSchema* s : OpRegistry::instance().all())
    if (projects(s->source)) ops[key(s->domain, s->op_type)].rule.insert(relative(s->source));
  for (const auto& k : KernelRegistry::instance().all())
    if (k->device == DeviceKind::kCpu && projects(k->source)) {
      auto it = ops.find(key(k->domain, k->op_type));
      if (it != ops.end()) it->second.cpu.insert(relative(k->source));
    }
  for (const GradientRule* g : GradientRegistry::instance().all()) {
    auto it = ops.find(key(g->domain, g->op_type));
    if (it != ops.end() && projects(g->source)) {
      it->second.gradient.insert(relative(g->source));
      it->second.has_gradient = g->kind == GradientKind::kRule   ? "yes"
                                : g->kind == GradientKind::kZero ? "zero"
                                                                 : "not differentiable";
    }
  }
  return ops;
}

std::string table() {
  std::ostringstream out;
  out << "# Where each op lives\n\n"
         "Made from the registrations by `tests/architecture/op_files_test.cc` (each\n"
         "`ORT_REGISTER_OP`, `ORT_REGISTER_KERNEL` and `ORT_GRADIENT` records its file);\n"
         "that test fails when this page differs. CUDA kernels register in\n"
         "`runtime/cuda/kernels/` (the CUDA plugin, not loaded where this page is made;\n"
         "`ort_train inspect` lists the nodes without one where it is). Ops of other\n"
         "domains are written `domain::Op`. The gradient column says whether the op\n"
         "has one: yes (a rule builds it), zero (piecewise constant), not\n"
         "differentiable, or no (no rule: `docs/gradients.md` says why). The dtypes\n"
         "each op computes in are in `docs/ops.md`, by family.\n\n"
         "| op | shape rule | CPU kernel | gradient rule | gradient |\n|---|---|---|---|---|\n";
  for (const auto& [op, f] : op_files())
    out << "| " << op << " | " << joined(f.rule) << " | " << joined(f.cpu) << " | " << joined(f.gradient) << " | "
        << f.has_gradient << " |\n";
  return out.str();
}

}  // namespace

TEST_CASE("op files: docs/op_files.md is made from the registrations", "[architecture]") {
  const std::string want = table();
  const fs::path doc = fs::path(source_dir()) / "docs/op_files.md";
  std::ifstream in(doc);
  std::stringstream have;
  have << in.rdbuf();
  if (have.str() != want) {
    const fs::path made = fs::absolute("op_files.md");
    std::ofstream(made) << want;
    FAIL("docs/op_files.md differs from the registrations; the table they make is in " << made.string()
                                                                                        << ": cp it to " << doc.string());
  }
  // Every op of the ONNX domain is in docs/ops.md's table, which gives its dtypes.
  std::ifstream ops_doc(fs::path(source_dir()) / "docs/ops.md");
  std::stringstream ops_text;
  ops_text << ops_doc.rdbuf();
  for (const auto& [op, f] : op_files()) {
    if (op.find("::") != std::string::npos) continue;
    INFO(op << " is not named in docs/ops.md");
    CHECK(std::regex_search(ops_text.str(), std::regex("\\b" + op + "\\b")));
  }
  // Every op has a shape rule file, and every rule file sits where the IR's rules live.
  for (const auto& [op, f] : op_files()) {
    INFO(op);
    REQUIRE_FALSE(f.rule.empty());
    for (const std::string& r : f.rule) CHECK(r.rfind("graph/ops/", 0) == 0);
    for (const std::string& k : f.cpu) CHECK(k.rfind("runtime/cpu/", 0) == 0);
    for (const std::string& g : f.gradient) CHECK(g.rfind("autodiff/rules/", 0) == 0);
  }
}

}  // namespace ort_train::testing
