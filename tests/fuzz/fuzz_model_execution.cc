// Past planning: a model file's forward executed on the CPU and, when the
// model names its own loss, one training step's forward and backward (every
// gradient kernel the backward uses), on small inputs whose values are the
// file's own bytes, so integer inputs hold indices in and out of range. A
// kernel may refuse its operands with an error; a crash, leak, hang or
// undefined behaviour is a finding. Bounds keep an execution cheap: symbolic
// dims bound to 2 (8 for sequence names), at most 4096 elements fed per
// input, a 64 MiB memory budget (the executor refuses a larger tensor by
// name before its kernel runs), no model whose products the plan counts
// above 1e8 FLOPs (or cannot count) or whose subgraphs hold a product, and
// Loops of at most 64 trips.
#include <cstring>
#include <type_traits>

#include "autodiff/training_graph.h"
#include "graph/gemm_flops.h"
#include "graph/control_flow.h"
#include "graph/onnx_io.h"
#include "graph/shape_inference.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "tests/fuzz/fuzz_input.h"

using namespace ort_train;

namespace {

constexpr int64_t kMaxFedElements = 4096;
constexpr double kMaxFlops = 1e8;

// Bytes of the file, cycled: the values every fed tensor holds.
struct Values {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  int8_t next() { return static_cast<int8_t>(data[at++ % size]); }
};

// Floats get the byte scaled; integers the byte itself, sign-extended
// (uint8 wraps it: a negative double cast to an unsigned type is undefined,
// and a conformance model's uint8 input reached that in CI).
template <typename T>
void fill(const Tensor& t, Values& v, double scale) {
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if constexpr (std::is_floating_point_v<T>) p[i] = static_cast<T>(v.next() * scale);
    else p[i] = static_cast<T>(v.next());
  }
}

// A tensor for each input the graph needs, or nothing when one cannot be made small.
bool make_feeds(const Graph& g, const std::map<std::string, int64_t>& dims, Values& values,
                std::map<std::string, Tensor>& feeds) {
  for (const ValueInfo* in : g.required_inputs()) {
    if (!in->shape) return false;
    Dims d;
    int64_t n = 1;
    for (const Dim& dim : *in->shape) {
      auto bound = dims.find(dim.symbol);
      d.push_back(dim.known() ? dim.value : bound != dims.end() ? bound->second : 2);
      n *= std::max<int64_t>(d.back(), 1);
      if (d.back() > kMaxFedElements || n > kMaxFedElements) return false;
    }
    Tensor t = Tensor::host(in->dtype, d);
    switch (in->dtype) {
      case DType::kFloat: fill<float>(t, values, 1.0 / 32); break;
      case DType::kDouble: fill<double>(t, values, 1.0 / 32); break;
      case DType::kInt64: fill<int64_t>(t, values, 1); break;
      case DType::kInt32: fill<int32_t>(t, values, 1); break;
      case DType::kInt8: fill<int8_t>(t, values, 1); break;
      case DType::kUInt8: fill<uint8_t>(t, values, 1); break;
      case DType::kBool: {
        auto* p = t.data<bool>();
        for (int64_t i = 0; i < t.numel(); ++i) p[i] = values.next() & 1;
        break;
      }
      default: return false;
    }
    feeds[in->name] = t;
  }
  return true;
}

// No product in a subgraph: its trips multiply whatever it costs, and its
// shapes are not inferred here to count it.
bool subgraphs_cheap(const Graph& g) {
  for (const Node& n : g.nodes)
    for (const Attribute& a : n.attributes)
      if (a.g) {
        GemmFlops f = count_gemm_flops(*a.g);
        if (!f.unknown.empty() || f.total() > 0 || !subgraphs_cheap(*a.g)) return false;
      }
  return true;
}

bool cheap(const Graph& g) {
  GemmFlops f = count_gemm_flops(g);
  return f.unknown.empty() && f.total() <= kMaxFlops && subgraphs_cheap(g);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool budget =
      (set_memory_limit(uint64_t{64} << 20), max_loop_trips() = 64, max_loop_work() = int64_t{1} << 30, true);
  (void)budget;
  auto model = load_model_from_bytes(fuzz::bytes_of(data, size), "/nonexistent/ort_train_fuzz");
  if (!model.ok() || size == 0 || !check_ops_known(*model).ok()) return 0;
  ShapeInferenceOptions options;
  options.dim_values = {{"batch", 2}, {"batch_size", 2}, {"seq", 8}, {"sequence", 8}, {"sequence_length", 8}};
  Model forward = *model;
  if (!infer_shapes(forward, options).ok() || !cheap(forward.graph)) return 0;
  Values values{data, size};
  std::map<std::string, Tensor> feeds;
  if (!make_feeds(forward.graph, options.dim_values, values, feeds)) return 0;
  auto ex = Executor::create(forward);
  if (ex.ok()) (void)(*ex)->run(feeds);

  ModelDescription desc;
  desc.dims = options.dim_values;
  auto training = build_training_graph(std::move(*model), desc);
  if (!training.ok() || !cheap(training->model.graph)) return 0;
  std::map<std::string, Tensor> training_feeds;
  if (!make_feeds(training->model.graph, options.dim_values, values, training_feeds)) return 0;
  auto step = Executor::create(training->model);
  if (!step.ok()) return 0;
  RunOptions run;
  run.training = true;
  (void)(*step)->run(training_feeds, run);
  return 0;
}
