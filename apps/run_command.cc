// `ort_train run`: forward only. Reads one TensorProto per graph input from a
// folder (<input name>.pb, or ONNX test-data style input_N.pb in input order),
// runs the model, writes <output name>.pb per output, and when expected outputs
// are present (output_N.pb or <output name>.pb in --expected) prints the max
// abs/rel error and fails if any value is outside tolerance.
#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "apps/commands.h"
#include "runtime/device_choice.h"
#include "runtime/timed_runs.h"
#include "apps/option_checks.h"
#include "autodiff/gradient_op.h"
#include "graph/onnx_io.h"
#include "graph/shape_inference.h"
#include "runtime/cpu/parallel.h"
#include "runtime/device.h"
#include "runtime/execution_plan.h"
#include "runtime/cpu/gemm_backend.h"
#include "runtime/executor.h"
#include "runtime/kernel_choice.h"

namespace ort_train::app {
namespace fs = std::filesystem;

void add_run_command(CLI::App& app, RunArgs& args) {
  CLI::App* run = app.add_subcommand("run", "Run the model forward on inputs read from a folder");
  run->add_option("--model", args.model, "ONNX model")->required();
  run->add_option("--inputs", args.inputs, "folder of TensorProto files, one per input")->required();
  run->add_option("--outputs", args.outputs, "folder to write <output name>.pb files into");
  add_max_memory_option(run, args.max_memory);
  run->add_option("--expected", args.expected, "folder of expected outputs (default: the inputs folder)");
  run->add_option("--rtol", args.rtol, "relative tolerance against expected outputs")->capture_default_str();
  run->add_option("--atol", args.atol, "absolute tolerance against expected outputs")->capture_default_str();
  run->add_option("--threads", args.threads, "CPU threads (0 = all cores)")
      ->check(whole_number_in(0, kMaxCpuThreads));
  add_device_option(run, args.device, "cpu or cuda[:i] (default: cpu)");
  run->add_flag("--no-tf32", args.no_tf32, "float32 matrix products and convolutions in full float32 on a GPU");
  add_gemm_library_option(run, args.gemm_library);
  run->add_flag("--deterministic", args.deterministic,
                "kernels chosen by timing (the CPU's GEMM library, attention) pinned to their defaults, as train "
                "--deterministic pins them: outputs equal to such a training run's bit for bit");
  run->add_option("--repeat", args.repeat, "run the forward pass N times and report the median time")
      ->check(whole_number_at_least(1));
  run->add_flag("--profile", args.profile, "print the time spent per op type, and per op and input shapes (with --repeat N: over runs 2..N)");
}

namespace {

// Feeds by name: <name>.pb files win; otherwise input_N.pb map to required inputs in order.
Result<std::map<std::string, Tensor>> read_feeds(const Graph& g, const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return io_error("inputs folder not found: {}", dir);
  // A file for a value the model holds as an initializer was read by nobody:
  // the run used the model's value and said nothing. Overriding it is not
  // offered (the passes fold initializers as constants), so it is refused.
  for (const auto& [name, t] : g.initializers) {
    std::string file = (fs::path(dir) / tensor_file_name(name)).string();
    if (path_present(file))
      return invalid_argument("{} feeds '{}', which the model holds as an initializer; run does not override "
                              "initializers: remove the file, or the initializer from the model",
                              file, name);
  }
  std::map<std::string, Tensor> feeds;
  auto required = g.required_inputs();
  for (size_t i = 0; i < required.size(); ++i) {
    const std::string& name = required[i]->name;
    fs::path by_name = fs::path(dir) / tensor_file_name(name);
    fs::path by_index = fs::path(dir) / ("input_" + std::to_string(i) + ".pb");
    fs::path file = path_present(by_name.string()) ? by_name : by_index;
    if (!path_present(file.string()))
      return invalid_argument("missing input '{}': neither {} nor {} exists", name, by_name.string(), by_index.string());
    ASSIGN_OR_RETURN(NamedTensor nt, read_tensor_file(file.string()));
    feeds[name] = std::move(nt.tensor);
  }
  return feeds;
}

struct Mismatch {
  double max_abs = 0, max_rel = 0;
  double max_expected = 0;  // largest |expected|: max_abs / max_expected is the scale-relative error
  bool ok = true;
};

Mismatch compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  Mismatch m;
  auto a = got.to_double_vector();
  auto b = want.to_double_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(b[i])) {
      // An inf or NaN expected matches only itself: a tolerance of
      // rtol * inf would pass any value.
      if (a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))) continue;
      m.max_abs = m.max_rel = INFINITY;
      m.ok = false;
      continue;
    }
    m.max_expected = std::max(m.max_expected, std::abs(b[i]));
    double abs = std::abs(a[i] - b[i]);
    double rel = abs / std::max(std::abs(b[i]), 1e-12);
    if (std::isnan(abs)) abs = rel = INFINITY;
    m.max_abs = std::max(m.max_abs, abs);
    m.max_rel = std::max(m.max_rel, abs == 0 ? 0.0 : rel);
    if (!(abs <= atol + rtol * std::abs(b[i]))) m.ok = false;
  }
  return m;
}

}  // namespace

Status run_command(const RunArgs& args) {
  // A tolerance of inf passes any output, and NaN or a negative one none.
  for (auto [flag, tol] : {std::pair{"--rtol", args.rtol}, std::pair{"--atol", args.atol}})
    if (!std::isfinite(tol) || tol < 0) return invalid_argument("{} {}: a tolerance is a finite number >= 0", flag, tol);
  set_cpu_threads(args.threads);
  RETURN_IF_ERROR(apply_max_memory(args.max_memory));
  ASSIGN_OR_RETURN(Model model, load_model(args.model));
  RETURN_IF_ERROR(expand_gradient_ops(model));  // ONNX's Gradient op, built by autodiff
  RETURN_IF_ERROR(check_ops_known(model));
  RETURN_IF_ERROR(check_tensor_io(model.graph));
  ASSIGN_OR_RETURN(auto feeds, read_feeds(model.graph, args.inputs));
  // Bind symbolic dims to the fed sizes so inference gives concrete shapes and
  // the plan's peak memory is known before anything runs.
  ShapeInferenceOptions shape_options;
  for (const ValueInfo* v : model.graph.required_inputs()) {
    auto it = feeds.find(v->name);
    if (it == feeds.end() || !v->shape || v->shape->size() != it->second.dims().size()) continue;
    for (size_t k = 0; k < v->shape->size(); ++k)
      if (!(*v->shape)[k].symbol.empty()) shape_options.dim_values[(*v->shape)[k].symbol] = it->second.dims()[k];
  }
  RETURN_IF_ERROR(infer_shapes(model, shape_options));
  MemoryEstimate estimate = estimate_memory(model);
  spdlog::info("{} nodes; weights {:.2f} MiB; planned peak activations {:.2f} MiB{}", model.graph.nodes.size(),
               estimate.initializer_bytes / 1048576.0, estimate.peak_activation_bytes / 1048576.0,
               estimate.complete ? "" : " (some shapes known only at run time)");
  DeviceSettings settings;
  settings.allow_tf32 = !args.no_tf32;
  settings.deterministic = args.deterministic;
  KernelChoices::instance().set_deterministic(args.deterministic);
  RETURN_IF_ERROR(set_gemm_library(args.gemm_library));
  ASSIGN_OR_RETURN(std::shared_ptr<Device> device, choose_device(args.device, settings, model));
  RETURN_IF_ERROR(check_plan_fits(model, estimate, *device));
  ASSIGN_OR_RETURN(auto executor, Executor::create(model, device));
  ASSIGN_OR_RETURN(TimedRuns runs, run_timed(*executor, feeds, RunOptions{}, args.repeat, args.profile));
  std::map<std::string, Tensor>& outputs = runs.outputs;
  for (auto& [name, t] : outputs) {
    ASSIGN_OR_RETURN(t, to_host(*device, t));
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  spdlog::info("ran {} nodes; peak intermediate memory {:.2f} MiB; peak RSS {:.1f} MiB", model.graph.nodes.size(),
               executor->allocator().peak_bytes() / 1048576.0, usage.ru_maxrss / 1024.0);
  if (args.repeat > 1) std::printf("forward: median %.3f ms over %d runs\n", runs.median_ms(), args.repeat);
  if (args.profile) print_op_profile(runs);

  if (!args.outputs.empty()) {
    std::error_code ec;
    fs::create_directories(args.outputs, ec);
    if (ec) return io_error("cannot create {}: {}", args.outputs, ec.message());
    for (const auto& [name, t] : outputs)
      RETURN_IF_ERROR(write_tensor_file(t, name, (fs::path(args.outputs) / tensor_file_name(name)).string()));
  }

  std::string expected_dir = args.expected.empty() ? args.inputs : args.expected;
  bool all_ok = true;
  int compared = 0;
  const auto& graph_outputs = model.graph.outputs;
  for (size_t i = 0; i < graph_outputs.size(); ++i) {
    const std::string& name = graph_outputs[i].name;
    fs::path by_name = fs::path(expected_dir) / tensor_file_name(name);
    fs::path by_index = fs::path(expected_dir) / ("output_" + std::to_string(i) + ".pb");
    fs::path file = path_present(by_name.string()) && by_name.parent_path() != fs::path(args.inputs) ? by_name : by_index;
    if (!path_present(file.string())) continue;
    ASSIGN_OR_RETURN(NamedTensor want, read_tensor_file(file.string()));
    const Tensor& got = outputs.at(name);
    if (got.dtype() != want.tensor.dtype() || got.dims() != want.tensor.dims()) {
      std::printf("%s: MISMATCH got %s %s, expected %s %s\n", name.c_str(), dtype_name(got.dtype()).c_str(),
                  dims_to_string(got.dims()).c_str(), dtype_name(want.tensor.dtype()).c_str(),
                  dims_to_string(want.tensor.dims()).c_str());
      all_ok = false;
      continue;
    }
    Mismatch m = compare(got, want.tensor, args.rtol, args.atol);
    std::printf("%s: max abs err %.3g, max rel err %.3g, max abs err / max |expected| %.3g %s\n", name.c_str(),
                m.max_abs, m.max_rel, m.max_expected > 0 ? m.max_abs / m.max_expected : m.max_abs,
                m.ok ? "ok" : "MISMATCH");
    all_ok = all_ok && m.ok;
    ++compared;
  }
  if (!all_ok) return invalid_argument("outputs differ from the expected values beyond rtol {} atol {}", args.rtol, args.atol);
  // A folder named by --expected that holds nothing to compare would pass
  // silently; the inputs folder (the default) may hold no expected outputs.
  if (!args.expected.empty() && compared == 0 && all_ok) {
    std::string names;
    for (size_t i = 0; i < graph_outputs.size(); ++i)
      names += fmt::format("{}{} or output_{}.pb", i ? ", " : "", tensor_file_name(graph_outputs[i].name), i);
    return invalid_argument("--expected {}: no expected output there to compare (looked for {})", args.expected,
                            names);
  }
  if (compared) std::printf("%d output(s) match\n", compared);
  return Status::Ok();
}

}  // namespace ort_train::app
