// Helpers shared by the tests: build a one-node model, run it, compare tensors.
#pragma once
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "autodiff/training_graph.h"
#include "graph/graph.h"
#include "graph/onnx_io.h"
#include "graph/shape_inference.h"
#include "runtime/device.h"
#include "runtime/executor.h"

namespace ort_train::testing {

// A model with one node `op` reading inputs named in0..inN-1 and writing out0..outM-1.
// Tensors in `initializers` (by index) become initializers instead of graph inputs,
// so shape rules can see their values (Reshape's shape, Slice's starts...).
struct NodeSpec {
  std::string op;
  std::vector<Tensor> inputs;          // an undefined Tensor marks an omitted optional input
  std::vector<Attribute> attributes;
  size_t num_outputs = 1;
  int64_t opset = 17;
  std::vector<size_t> constant_inputs;  // indices fed as initializers
  std::string domain;
  RunOptions run_options;               // training flag, seed and step for random kernels
};
Model single_node_model(const NodeSpec& spec);

// Runs the node; REQUIREs success and returns the outputs in order.
std::vector<Tensor> run_node(const NodeSpec& spec);
// Runs the node on `device` (null: the CPU); REQUIREs success and returns the
// outputs copied to the host.
std::vector<Tensor> run_node_on(const NodeSpec& spec, const std::shared_ptr<Device>& device);
// Runs the node and returns the error (REQUIREs failure).
Status run_node_error(const NodeSpec& spec);

// Element-wise comparison with tolerance; reports the first mismatch.
void require_close(const Tensor& actual, const Tensor& expected, double rtol = 1e-5, double atol = 1e-6);

template <typename T>
Tensor make(Dims dims, std::vector<T> values) {
  return Tensor::from_vector<T>(std::move(dims), values);
}
// Deterministic pseudo-random float tensor in [lo, hi).
Tensor random_tensor(Dims dims, uint64_t seed, float lo = -1.f, float hi = 1.f);

// A float32 tensor rounded to the 16-bit type H (Float16, BFloat16), and a
// 16-bit tensor's values as float32.
template <typename H>
Tensor narrowed(const Tensor& f) {
  Tensor h = Tensor::host(dtype_of<H>(), f.dims());
  for (int64_t i = 0; i < f.numel(); ++i) h.data<H>()[i] = H(f.data<float>()[i]);
  return h;
}
template <typename H>
Tensor widened(const Tensor& h) {
  Tensor f = Tensor::host(DType::kFloat, h.dims());
  for (int64_t i = 0; i < h.numel(); ++i) f.data<float>()[i] = static_cast<float>(h.data<H>()[i]);
  return f;
}
// A tensor of any stored dtype holding 0, 1, 2, ... modulo 101 (so every type holds it
// exactly; bool alternates), for layout tests that compare positions exactly.
Tensor counting_tensor(DType dtype, Dims dims);

// Runs the ort_train binary with `args` (a shell command line tail), capturing
// stdout and stderr (through a file in `dir`) and the exit code.
struct CliOutcome {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
};
CliOutcome run_cli(const std::string& args, const std::string& dir);
// The same for any shell command line.
CliOutcome run_shell(const std::string& command, const std::string& dir);

// A fresh folder under the system's temporary directory, removed at the end.
struct Dir {
  std::filesystem::path p;
  explicit Dir(const std::string& name) : p(std::filesystem::temp_directory_path() / name) {
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
  }
  ~Dir() { std::filesystem::remove_all(p); }
  std::string operator/(const std::string& rel) const { return (p / rel).string(); }
};

std::string source_dir();
std::string ort_train_binary();

// A bundled model's training graph (tests/models/<name>: model.onnx and
// training.yaml); REQUIREs that both load and the graph builds. The
// description is returned through `desc` when given.
TrainingGraph bundled_training_graph(const std::string& name, ModelDescription* desc = nullptr);

// Marks the running test as skipped: CTest matches kSkipMarker in its output
// (tests/CMakeLists.txt sets SKIP_REGULAR_EXPRESSION) and reports the test
// as "Skipped" instead of passed. Catch2 v2 has no SKIP of its own.
inline constexpr const char* kSkipMarker = "ORT_TRAIN_TEST_SKIPPED";
void report_skipped(const std::string& why);

}  // namespace ort_train::testing

// Ends the current test case as skipped, saying why.
#define ORT_TRAIN_SKIP(why)                                                          \
  do {                                                                               \
    std::ostringstream ort_train_skip_why_;                                          \
    ort_train_skip_why_ << why;                                                      \
    ::ort_train::testing::report_skipped(ort_train_skip_why_.str());                 \
    return;                                                                          \
  } while (false)
