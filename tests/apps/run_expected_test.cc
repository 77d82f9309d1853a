// `run --expected`: an inf or NaN expected value matches only the same
// value (issue 52, item 10: +inf passed any output, "max abs err inf ... ok").
#include <onnx/onnx_pb.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "test_util.h"

namespace ort_train::testing {
namespace {

namespace fs = std::filesystem;

onnx::TensorProto floats(const std::string& name, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(static_cast<int64_t>(values.size()));
  for (float v : values) t.add_float_data(v);
  return t;
}

// y = Identity(x), x an initializer holding `values`.
void write_model(const fs::path& path, const std::vector<float>& values) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("identity");
  *g->add_initializer() = floats("x", values);
  onnx::NodeProto* n = g->add_node();
  n->set_name("id");
  n->set_op_type("Identity");
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  std::ofstream out(path, std::ios::binary);
  REQUIRE(m.SerializeToOstream(&out));
}

void write_expected(const fs::path& dir, const std::vector<float>& values) {
  fs::create_directories(dir);
  std::ofstream out(dir / "output_0.pb", std::ios::binary);
  REQUIRE(floats("y", values).SerializeToOstream(&out));
}

}  // namespace

TEST_CASE("run.an_inf_or_nan_expected_matches_only_itself") {
  Dir d("ort_train_run_expected");
  fs::create_directories(d.p / "empty");
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  struct Case {
    std::vector<float> got, expected;
    bool matches;
  };
  const Case cases[] = {
      {{1, 2}, {inf, 2}, false},    // the reported case: any value passed +inf
      {{inf, 2}, {inf, 2}, true},   // the same inf
      {{-inf, 2}, {inf, 2}, false},
      {{1, 2}, {-inf, 2}, false},
      {{nan, 2}, {nan, 2}, true},
      {{1, 2}, {nan, 2}, false},
      {{1, 2}, {1, 2}, true},
  };
  for (const Case& c : cases) {
    INFO("got " << c.got[0] << ", expected " << c.expected[0]);
    write_model(d.p / "m.onnx", c.got);
    fs::remove_all(d.p / "want");
    write_expected(d.p / "want", c.expected);
    CliOutcome o = run_cli("--log-level error run --model " + (d / "m.onnx") + " --inputs " + (d / "empty") +
                               " --expected " + (d / "want"),
                           d.p.string());
    INFO(o.stdout_text << o.stderr_text);
    CHECK((o.exit_code == 0) == c.matches);
    CHECK((o.stdout_text.find("MISMATCH") == std::string::npos) == c.matches);
  }
}

// Issue 52 (a further round): a --expected folder with nothing to compare,
// and a tolerance that is inf, NaN or negative, are refused, not passed.
TEST_CASE("run.an_expected_folder_with_nothing_to_compare_and_bad_tolerances_are_refused") {
  Dir d("ort_train_run_expected_edges");
  fs::create_directories(d.p / "empty");
  fs::create_directories(d.p / "nothing");
  write_model(d.p / "m.onnx", {1, 2});
  write_expected(d.p / "want", {5, 2});
  const std::string run = "--log-level error run --model " + (d / "m.onnx") + " --inputs " + (d / "empty");
  CliOutcome o = run_cli(run + " --expected " + (d / "nothing"), d.p.string());
  CHECK(o.exit_code != 0);
  CHECK(o.stderr_text.find("no expected output there to compare") != std::string::npos);
  for (const char* tol : {"--atol inf", "--rtol inf", "--atol nan", "--rtol -1"}) {
    INFO(tol);
    o = run_cli(run + " --expected " + (d / "want") + " " + tol, d.p.string());
    CHECK(o.exit_code != 0);
    CHECK(o.stderr_text.find("a tolerance is a finite number >= 0") != std::string::npos);
  }
  // Without --expected, the inputs folder may hold no expected outputs.
  CHECK(run_cli(run, d.p.string()).exit_code == 0);
}

}  // namespace ort_train::testing
