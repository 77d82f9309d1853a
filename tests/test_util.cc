#include "test_util.h"

#include <cstdlib>

#include <sys/wait.h>

#include <array>
#include <cstdio>

#include <cmath>
#include <random>
#include <type_traits>

#include "graph/dispatch.h"

namespace ort_train::testing {

Model single_node_model(const NodeSpec& spec) {
  Model m;
  m.ir_version = 8;
  m.opset_imports.push_back({"", spec.opset});
  if (!spec.domain.empty()) m.opset_imports.push_back({spec.domain, 1});
  Graph& g = m.graph;
  g.name = "test_" + spec.op;
  Node n;
  n.name = spec.op + "_node";
  n.op_type = spec.op;
  n.domain = spec.domain;
  n.attributes = spec.attributes;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const Tensor& t = spec.inputs[i];
    if (!t.defined()) {
      n.inputs.push_back("");
      continue;
    }
    std::string name = "in" + std::to_string(i);
    n.inputs.push_back(name);
    bool constant = std::find(spec.constant_inputs.begin(), spec.constant_inputs.end(), i) != spec.constant_inputs.end();
    if (constant) {
      g.initializers[name] = t;
      g.initializer_order.push_back(name);
      g.values[name] = ValueInfo{name, t.dtype(), shape_from_dims(t.dims()), ""};
    } else {
      g.inputs.push_back(ValueInfo{name, t.dtype(), shape_from_dims(t.dims()), ""});
    }
  }
  for (size_t i = 0; i < spec.num_outputs; ++i) {
    std::string name = "out" + std::to_string(i);
    n.outputs.push_back(name);
    g.outputs.push_back(ValueInfo{name, DType::kUndefined, std::nullopt, ""});
  }
  g.nodes.push_back(std::move(n));
  return m;
}

namespace {
Result<std::vector<Tensor>> try_run(const NodeSpec& spec, const std::shared_ptr<Device>& device = nullptr) {
  Model m = single_node_model(spec);
  RETURN_IF_ERROR(infer_shapes(m));
  ASSIGN_OR_RETURN(auto ex, Executor::create(m, device));
  std::map<std::string, Tensor> feeds;
  for (const ValueInfo& v : m.graph.inputs) {
    size_t i = std::stoul(v.name.substr(2));
    feeds[v.name] = spec.inputs[i];
  }
  ASSIGN_OR_RETURN(auto outs, ex->run(feeds, spec.run_options));
  std::vector<Tensor> result;
  for (size_t i = 0; i < spec.num_outputs; ++i) {
    Tensor t = outs["out" + std::to_string(i)];
    if (device && t.defined() && t.device() != DeviceKind::kCpu) { ASSIGN_OR_RETURN(t, to_host(*device, t)); }
    result.push_back(t);
  }
  return result;
}
}  // namespace

std::vector<Tensor> run_node_on(const NodeSpec& spec, const std::shared_ptr<Device>& device) {
  auto r = try_run(spec, device);
  INFO(r.status().message());
  REQUIRE(r.ok());
  return std::move(r).value();
}

std::vector<Tensor> run_node(const NodeSpec& spec) {
  auto r = try_run(spec);
  INFO(r.status().message());
  REQUIRE(r.ok());
  return std::move(r).value();
}

Status run_node_error(const NodeSpec& spec) {
  auto r = try_run(spec);
  REQUIRE_FALSE(r.ok());
  return r.status();
}

void require_close(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  REQUIRE(dtype_name(actual.dtype()) == dtype_name(expected.dtype()));
  REQUIRE(dims_to_string(actual.dims()) == dims_to_string(expected.dims()));
  auto a = actual.to_double_vector();
  auto e = expected.to_double_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    bool both_nan = std::isnan(a[i]) && std::isnan(e[i]);
    if (!both_nan && !(std::abs(a[i] - e[i]) <= atol + rtol * std::abs(e[i]))) {
      INFO("element " << i << ": got " << a[i] << ", expected " << e[i]);
      REQUIRE(false);
    }
  }
}

Tensor random_tensor(Dims dims, uint64_t seed, float lo, float hi) {
  Tensor t = Tensor::host(DType::kFloat, std::move(dims));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

Tensor counting_tensor(DType dtype, Dims dims) {
  Tensor t = Tensor::host(dtype, std::move(dims));
  dispatch_all(dtype, [&]<typename T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(std::is_same_v<T, bool> ? i % 2 : i % 101);
  });
  return t;
}

// The build's paths, unless the environment says otherwise: a test binary
// carried to another machine (tools/gpu_bundle.sh) finds the repository and
// the app there.
std::string source_dir() {
  const char* e = std::getenv("ORT_TRAIN_SOURCE_DIR");
  return e && *e ? e : ORT_TRAIN_SOURCE_DIR;
}
std::string ort_train_binary() {
  const char* e = std::getenv("ORT_TRAIN_BINARY");
  return e && *e ? e : ORT_TRAIN_BINARY;
}

CliOutcome run_cli(const std::string& args, const std::string& dir) {
  return run_shell(ort_train_binary() + " " + args, dir);
}

CliOutcome run_shell(const std::string& command, const std::string& dir) {
  std::string err_file = dir + "/stderr.txt";
  std::string cmd = command + " 2>" + err_file;
  CliOutcome o;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.stdout_text.append(buf.data(), n);
  int status = pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto err = read_file(err_file);
  o.stderr_text = err.ok() ? *err : "";
  return o;
}

TrainingGraph bundled_training_graph(const std::string& name, ModelDescription* desc) {
  std::string dir = source_dir() + "/tests/models/" + name;
  auto d = load_description(dir + "/training.yaml");
  INFO(d.status().message());
  REQUIRE(d.ok());
  auto model = load_model(dir + "/model.onnx");
  INFO(model.status().message());
  REQUIRE(model.ok());
  auto tg = build_training_graph(std::move(model).value(), *d);
  INFO(tg.status().message());
  REQUIRE(tg.ok());
  if (desc) *desc = *d;
  return std::move(tg).value();
}

void report_skipped(const std::string& why) {
  std::printf("%s: %s\n", kSkipMarker, why.c_str());
  std::fflush(stdout);
  WARN("skipped: " << why);
}

}  // namespace ort_train::testing
