// `ort_train train` and `inspect` through the real binary: gradients dumped
// under escaped names, the saved training graph reproduces them through
// `ort_train run`, and bad input gets one message and a non-zero exit.
#include <filesystem>
#include <fstream>

#include "graph/onnx_io.h"
#include "test_util.h"

namespace ort_train::testing {
namespace fs = std::filesystem;
namespace {

struct Workspace {
  fs::path dir;
  explicit Workspace(const std::string& name) : dir(fs::temp_directory_path() / name) {
    fs::remove_all(dir);
    fs::create_directories(dir / "data/000");
    std::ofstream(dir / "mse.yaml") << "inputs: [{name: x, dtype: float32, shape: [batch, 32]}]\n"
                                       "labels: [{name: labels, dtype: float32, shape: [batch, 10]}]\n"
                                       "loss: {type: mse, input: logits, target: labels}\n";
    REQUIRE(write_tensor_file(random_tensor({3, 32}, 5), "x", (dir / "data/000/x.pb").string()).ok());
    REQUIRE(write_tensor_file(random_tensor({3, 10}, 6), "labels", (dir / "data/000/labels.pb").string()).ok());
  }
  ~Workspace() { fs::remove_all(dir); }
  std::string model() const { return source_dir() + "/tests/models/mlp/model.onnx"; }
  std::string p(const std::string& rel) const { return (dir / rel).string(); }
};

}  // namespace

TEST_CASE("cli.train_dumps_gradients_and_the_saved_graph_reproduces_them") {
  Workspace ws("ort_train_cli_train");
  CliOutcome o = run_cli("--model " + ws.model() + " --config " + ws.p("mse.yaml") + " --data " + ws.p("data") +
                             " --dump-gradients " + ws.p("grads") + " --save-training-graph " + ws.p("train.onnx") +
                             " --device cpu --deterministic",
                         ws.dir.string());
  INFO(o.stderr_text);
  REQUIRE(o.exit_code == 0);
  for (const char* w : {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"})
    CHECK(fs::exists(ws.dir / "grads" / tensor_file_name(w)));
  // Both --deterministic: the GEMM library each process would time for itself is pinned.
  CliOutcome r = run_cli("run --model " + ws.p("train.onnx") + " --inputs " + ws.p("data/000") + " --outputs " +
                             ws.p("out") + " --deterministic",
                         ws.dir.string());
  INFO(r.stderr_text);
  REQUIRE(r.exit_code == 0);
  auto dumped = read_tensor_file(ws.p("grads/fc2.weight.pb"));
  auto rerun = read_tensor_file(ws.p("out/fc2.weight_grad.pb"));
  REQUIRE(dumped.ok());
  REQUIRE(rerun.ok());
  CHECK(dumped->name == "fc2.weight");
  require_close(rerun->tensor, dumped->tensor, 0, 0);
}

TEST_CASE("cli.inspect_reports_parameters_and_graph") {
  Workspace ws("ort_train_cli_inspect");
  CliOutcome o = run_cli("inspect --model " + ws.model() + " --config " + ws.p("mse.yaml") + " --batch-size 4",
                         ws.dir.string());
  INFO(o.stdout_text << o.stderr_text);
  CHECK(o.exit_code == 0);
  CHECK(o.stdout_text.find("6 trainable tensors, 6922 elements") != std::string::npos);
  CHECK(o.stdout_text.find("backward nodes") != std::string::npos);
  CHECK(o.stdout_text.find("peak activations") != std::string::npos);
}

TEST_CASE("cli.train_bad_input_one_message") {
  Workspace ws("ort_train_cli_train_errors");
  std::ofstream(ws.dir / "bad.yaml") << "optimiser: {name: Adam}\n";
  struct Case {
    std::string args;
    std::string expect;
  };
  for (const Case& c : {
           Case{"--config " + ws.p("bad.yaml") + " --model " + ws.model(), "optimiser: unknown key"},
           Case{"--config " + ws.p("mse.yaml"), "no model"},
           Case{"--model " + ws.model(), "include no scalar loss"},
           Case{"--model " + ws.model() + " --config " + ws.p("mse.yaml") + " --dump-gradients " + ws.p("g"),
                "--dump-gradients needs data"},
           Case{"--model " + ws.model() + " --config " + ws.p("mse.yaml") + " --data " + ws.p("nowhere"),
                "--data " + ws.p("nowhere") + " does not exist"},
       }) {
    CliOutcome o = run_cli(c.args, ws.dir.string());
    INFO(c.args << "\n" << o.stderr_text);
    CHECK(o.exit_code != 0);
    CHECK(o.stderr_text.find(c.expect) != std::string::npos);
    CHECK(o.stderr_text.find("error:") != std::string::npos);
  }
}

}  // namespace ort_train::testing
