// `ort_train run` end to end through the real binary: outputs written, expected
// outputs compared, and every bad input answered with one line and a non-zero exit.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;
namespace fs = std::filesystem;

namespace {

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// A folder with model.onnx (y = x * w, x: float [2,3]) and inputs/x.pb.
fs::path make_case(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ort_train_cli_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "inputs");
  Model m;
  m.opset_imports = {{"", 17}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim(2), Dim(3)}, ""});
  m.graph.initializers["w"] = make<float>({3}, {1, 2, 3});
  m.graph.initializer_order = {"w"};
  m.graph.nodes.push_back({"mul", "Mul", "", {"x", "w"}, {"y"}, {}, ""});
  m.graph.outputs.push_back({"y", DType::kFloat, Shape{Dim(2), Dim(3)}, ""});
  REQUIRE(save_model(m, (dir / "model.onnx").string()).ok());
  REQUIRE(write_tensor_file(make<float>({2, 3}, {1, 1, 1, 2, 2, 2}), "x", (dir / "inputs" / "x.pb").string()).ok());
  return dir;
}

}  // namespace

TEST_CASE("run writes outputs and checks expected ones", "[cli]") {
  fs::path dir = make_case("ok");
  REQUIRE(write_tensor_file(make<float>({2, 3}, {1, 2, 3, 2, 4, 6}), "y", (dir / "inputs" / "output_0.pb").string()).ok());
  CliOutcome o = run_cli("run --model " + (dir / "model.onnx").string() + " --inputs " + (dir / "inputs").string() +
                          " --outputs " + (dir / "out").string(), dir);
  INFO(o.stderr_text);
  REQUIRE(o.exit_code == 0);
  REQUIRE_THAT(o.stdout_text, Catch::Contains("1 output(s) match"));
  auto y = read_tensor_file((dir / "out" / "y.pb").string());
  REQUIRE(y.ok());
  REQUIRE(y->name == "y");
  require_close(y->tensor, make<float>({2, 3}, {1, 2, 3, 2, 4, 6}));

  // A wrong expected value fails the run.
  REQUIRE(write_tensor_file(make<float>({2, 3}, {1, 2, 3, 2, 4, 7}), "y", (dir / "inputs" / "output_0.pb").string()).ok());
  CliOutcome bad = run_cli("run --model " + (dir / "model.onnx").string() + " --inputs " + (dir / "inputs").string(), dir);
  REQUIRE(bad.exit_code != 0);
  REQUIRE_THAT(bad.stdout_text, Catch::Contains("MISMATCH"));
  fs::remove_all(dir);
}

TEST_CASE("bad input gets one line on stderr and a non-zero exit", "[cli][errors]") {
  fs::path dir = make_case("errors");
  std::string model = (dir / "model.onnx").string();
  std::string inputs = (dir / "inputs").string();

  SECTION("missing model file") {
    CliOutcome o = run_cli("run --model " + (dir / "nope.onnx").string() + " --inputs " + inputs, dir);
    REQUIRE(o.exit_code != 0);
    REQUIRE_THAT(o.stderr_text, Catch::Contains("file not found"));
    REQUIRE(count_lines(o.stderr_text) == 1);
  }
  SECTION("truncated model") {
    std::string bytes = *read_file(model);
    std::ofstream(dir / "cut.onnx", std::ios::binary) << bytes.substr(0, bytes.size() - 7);
    CliOutcome o = run_cli("run --model " + (dir / "cut.onnx").string() + " --inputs " + inputs, dir);
    REQUIRE(o.exit_code != 0);
    REQUIRE_THAT(o.stderr_text, Catch::Contains("not a valid ONNX model"));
    REQUIRE(count_lines(o.stderr_text) == 1);
  }
  SECTION("missing input file") {
    fs::remove(dir / "inputs" / "x.pb");
    CliOutcome o = run_cli("run --model " + model + " --inputs " + inputs, dir);
    REQUIRE(o.exit_code != 0);
    REQUIRE_THAT(o.stderr_text, Catch::Contains("missing input 'x'"));
    REQUIRE(count_lines(o.stderr_text) == 1);
  }
  SECTION("wrong dtype") {
    REQUIRE(write_tensor_file(make<int64_t>({2, 3}, {1, 1, 1, 2, 2, 2}), "x", (dir / "inputs" / "x.pb").string()).ok());
    CliOutcome o = run_cli("run --model " + model + " --inputs " + inputs, dir);
    REQUIRE(o.exit_code != 0);
    REQUIRE_THAT(o.stderr_text, Catch::Contains("expected dtype float32, got int64"));
    REQUIRE(count_lines(o.stderr_text) == 1);
  }
  SECTION("wrong shape") {
    REQUIRE(write_tensor_file(make<float>({3, 2}, {1, 1, 1, 2, 2, 2}), "x", (dir / "inputs" / "x.pb").string()).ok());
    CliOutcome o = run_cli("run --model " + model + " --inputs " + inputs, dir);
    REQUIRE(o.exit_code != 0);
    REQUIRE_THAT(o.stderr_text, Catch::Contains("expected shape [2,3], got [3,2]"));
    REQUIRE(count_lines(o.stderr_text) == 1);
  }
  SECTION("corrupt input file") {
    std::ofstream(dir / "inputs" / "x.pb", std::ios::binary) << "\xff\xff\xff garbage";
    CliOutcome o = run_cli("run --model " + model + " --inputs " + inputs, dir);
    REQUIRE(o.exit_code != 0);
    REQUIRE_THAT(o.stderr_text, Catch::Contains("not a valid ONNX TensorProto"));
    REQUIRE(count_lines(o.stderr_text) == 1);
  }
  SECTION("a feed for an initializer") {
    REQUIRE(write_tensor_file(make<float>({3}, {9, 9, 9}), "w", (dir / "inputs" / "w.pb").string()).ok());
    CliOutcome o = run_cli("run --model " + model + " --inputs " + inputs, dir);
    REQUIRE(o.exit_code != 0);
    REQUIRE_THAT(o.stderr_text, Catch::Contains("feeds 'w', which the model holds as an initializer"));
    REQUIRE(count_lines(o.stderr_text) == 1);
  }
  SECTION("more threads than OpenBLAS can start") {
    // 100000 hung OpenBLAS's initialisation.
    CliOutcome o = run_cli("run --model " + model + " --inputs " + inputs + " --threads 100000", dir);
    REQUIRE(o.exit_code != 0);
    REQUIRE_THAT(o.stderr_text, Catch::Contains("--threads"));
    REQUIRE_THAT(o.stderr_text, Catch::Contains("1024"));
  }
  SECTION("unknown flag") {
    CliOutcome o = run_cli("run --model " + model + " --inputs " + inputs + " --bogus 1", dir);
    REQUIRE(o.exit_code != 0);
    REQUIRE_THAT(o.stderr_text, Catch::Contains("--bogus"));
  }
  fs::remove_all(dir);
}

TEST_CASE("unsupported ops are all listed before anything runs", "[cli][errors]") {
  fs::path dir = make_case("unsupported");
  Model m;
  m.opset_imports = {{"", 17}};
  m.graph.inputs.push_back({"x", DType::kFloat, Shape{Dim(2), Dim(3)}, ""});
  m.graph.nodes.push_back({"fft_node", "DFT", "", {"x"}, {"a"}, {}, ""});
  m.graph.nodes.push_back({"stft_node", "STFT", "", {"a"}, {"y"}, {}, ""});
  m.graph.outputs.push_back({"y", DType::kFloat, std::nullopt, ""});
  REQUIRE(save_model(m, (dir / "bad_ops.onnx").string()).ok());
  CliOutcome o = run_cli("run --model " + (dir / "bad_ops.onnx").string() + " --inputs " + (dir / "inputs").string(), dir);
  REQUIRE(o.exit_code != 0);
  REQUIRE_THAT(o.stderr_text, Catch::Contains("fft_node (DFT opset 17)"));
  REQUIRE_THAT(o.stderr_text, Catch::Contains("stft_node (STFT opset 17)"));
  fs::remove_all(dir);
}
