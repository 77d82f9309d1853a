#include "runtime/control_flow_kernels.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "graph/control_flow.h"
#include "runtime/executor.h"

namespace ort_train {
namespace {

// The work of the outermost If/Loop/Scan running on this thread, nested
// bodies' trips included (their kernels run on the same thread, inside it):
// a bound on each loop alone let two nested ones make 2^48 trips.
struct ControlFlowWork {
  int depth = 0;
  int64_t trips = 0;
  int64_t elements = 0;  // carried into the next trip, summed over the trips
  // How many times the running body is certain to run yet: the product of
  // the trips left to each enclosing Loop whose trip count is fixed (this
  // trip included), so a fixed Loop inside a fixed Loop is refused before its
  // first trip when the product passes the bound, not after 2^24 trips.
  int64_t certain = 1;
  int64_t work = 0;  // max_loop_work's units, nested bodies' included
};
thread_local ControlFlowWork g_work;

// Held by each control-flow kernel while it runs; the outermost starts the count.
class WorkScope {
 public:
  WorkScope() {
    if (g_work.depth++ == 0) g_work = ControlFlowWork{1, 0, 0, 1, 0};
  }
  ~WorkScope() { --g_work.depth; }
  WorkScope(const WorkScope&) = delete;
  WorkScope& operator=(const WorkScope&) = delete;
};

// One trip (a Loop's, a Scan's step) of `node` that carries `carried` on:
// an error once the outermost node's trips, or the elements they carried,
// pass the bounds of graph/control_flow.h.
Status count_trip(const Node& node, const std::vector<Tensor>& carried) {
  if (++g_work.trips > max_loop_trips())
    return invalid_argument("{}: more than {} trips in all, the trips of the loops nested in it included",
                            node.describe(), max_loop_trips());
  for (const Tensor& t : carried) g_work.elements += t.numel();
  if (g_work.elements > max_loop_elements())
    return invalid_argument("{}: its trips carried more than {} elements in all (a value that grows every trip?)",
                            node.describe(), max_loop_elements());
  g_work.work += kTripWork;
  if (g_work.work > max_loop_work())
    return invalid_argument("{}: its trips did more than {} units of work in all, the bodies nested in it included "
                            "(a unit: an element a kernel writes or a multiply-add)",
                            node.describe(), max_loop_work());
  return Status::Ok();
}

// After the first of `trips` trips of a node whose trips are all certain (a
// fixed Loop, a Scan), made `certain` times yet by the enclosing fixed Loops:
// an error now when the trips at the first one's work would pass the bound.
Status check_projected_work(const Node& node, int64_t first_trip_work, int64_t trips, int64_t certain) {
  int64_t runs = 0, projected = 0;
  const int64_t left = max_loop_work() - (g_work.work - first_trip_work);
  if (__builtin_mul_overflow(trips, certain, &runs) || __builtin_mul_overflow(runs, first_trip_work, &projected) ||
      projected > left)
    return invalid_argument("{}: {} trips{} at its first trip's {} units of work would do more than the {} a run's "
                            "control flow may (a unit: an element a kernel writes or a multiply-add)",
                            node.describe(), trips,
                            certain > 1 ? fmt::format(", each of {} times it certainly runs,", certain) : std::string(),
                            first_trip_work, max_loop_work());
  return Status::Ok();
}

// Multiply-adds of a product kernel, from its operands' dims (0 for any other op).
int64_t multiply_adds(const KernelContext& ctx, int64_t written) {
  const Node& n = ctx.node();
  const std::string& op = n.op_type;
  if (ctx.num_inputs() < 2 || !ctx.has_input(0) || !ctx.has_input(1)) return 0;
  const std::vector<int64_t>& a = ctx.input(0).dims();
  const std::vector<int64_t>& w = ctx.input(1).dims();
  int64_t k = 0;
  if ((op == "MatMul" || op == "FusedMatMul" || op == "MatMulInteger") && !a.empty()) {
    k = a.back();
    if (op == "FusedMatMul" && n.attr_int("transA", 0) && a.size() >= 2) k = a[a.size() - 2];
  } else if (op == "Gemm" && a.size() == 2) {
    k = n.attr_int("transA", 0) ? a[0] : a[1];
  } else if ((op == "Conv" || op == "ConvTranspose") && w.size() >= 2) {
    k = 1;
    for (size_t i = 1; i < w.size(); ++i) k = w[i] > 0 && k <= (int64_t{1} << 40) / w[i] ? k * w[i] : k;
  }
  int64_t macs = 0;
  return k > 0 && !__builtin_mul_overflow(written, k, &macs) ? macs : 0;
}

}  // namespace

void note_control_flow_work(const KernelContext& ctx) {
  if (g_work.depth == 0) return;
  int64_t written = 0;
  for (const Tensor& t : ctx.outputs())
    if (t.defined()) written += t.numel();
  int64_t work = kNodeRunWork + written + multiply_adds(ctx, written);
  g_work.work = work > INT64_MAX - g_work.work ? INT64_MAX : g_work.work + work;
}

namespace {

// Whether a Loop's trips are fixed at its start: no condition, or one that
// is true and that the body passes on unchanged (PyTorch's `for i in
// range(n)` exports so), so it makes all M trips.
bool trips_fixed(const Node& loop, bool has_cond, bool cond) {
  if (!has_cond) return true;
  std::shared_ptr<const Graph> body = subgraph(loop, "body");
  if (!cond || !body || body->inputs.size() < 2 || body->outputs.empty()) return false;
  std::string v = body->outputs[0].name;
  for (size_t hops = 0; hops <= body->nodes.size(); ++hops) {
    if (v == body->inputs[1].name) return true;
    auto it = std::find_if(body->nodes.begin(), body->nodes.end(), [&](const Node& n) {
      return std::find(n.outputs.begin(), n.outputs.end(), v) != n.outputs.end();
    });
    if (it == body->nodes.end() || it->op_type != "Identity" || !it->domain.empty() || it->inputs.size() != 1)
      return false;
    v = it->inputs[0];
  }
  return false;
}

// Restores the enclosing count of certain runs when a Loop ends.
class CertainRuns {
 public:
  CertainRuns() : outer_(g_work.certain) {}
  ~CertainRuns() { g_work.certain = outer_; }
  CertainRuns(const CertainRuns&) = delete;
  CertainRuns& operator=(const CertainRuns&) = delete;
  int64_t outer() const { return outer_; }

 private:
  int64_t outer_;
};

class SubgraphExecutors {
 public:
  static SubgraphExecutors& instance() {
    static SubgraphExecutors s;
    return s;
  }

  // Runs subgraph `attr` of `node` on `feeds` (its formal inputs in order).
  Result<std::vector<Tensor>> run(const Node& node, const std::string& attr, const std::vector<const Tensor*>& feeds,
                                  const RunOptions& options, const std::shared_ptr<Device>& device) {
    std::shared_ptr<const Graph> g = subgraph(node, attr);
    if (!g) return invalid_argument("{}: attribute '{}' must be a graph", node.describe(), attr);
    if (g->inputs.size() != feeds.size())
      return invalid_argument("{}: '{}' has {} inputs; it is given {}", node.describe(), attr, g->inputs.size(),
                              feeds.size());
    ASSIGN_OR_RETURN(Entry * e, entry(node, g, feeds, device));
    std::map<std::string, Tensor> named;
    for (size_t i = 0; i < feeds.size(); ++i) named[g->inputs[i].name] = *feeds[i];
    std::lock_guard<std::mutex> lock(e->running);
    auto out = e->executor->run(named, options);
    if (!out.ok()) return out.status().with_context(node.describe() + " '" + attr + "'");
    // On a GPU a subgraph may hand back a value it computed on the host
    // (shape arithmetic): the node's outputs live on its device.
    std::vector<Tensor> result;
    for (const ValueInfo& o : g->outputs) {
      ASSIGN_OR_RETURN(Tensor t, to_device(*device, out->at(o.name)));
      result.push_back(std::move(t));
    }
    return result;
  }

 private:
  struct Entry {
    std::weak_ptr<const Graph> graph;  // not held: the cache never keeps a model's subgraph alive
    std::unique_ptr<Executor> executor;
    std::mutex running;
  };

  Result<Entry*> entry(const Node& node, const std::shared_ptr<const Graph>& g,
                       const std::vector<const Tensor*>& feeds, const std::shared_ptr<Device>& device) {
    // Devices live as long as the process: their address names one (cuda:0 or cuda:1).
    std::string key =
        std::to_string(reinterpret_cast<uintptr_t>(g.get())) + "@" + std::to_string(reinterpret_cast<uintptr_t>(device.get()));
    std::vector<ValueInfo> types;
    for (const Tensor* t : feeds) {
      key += ":" + std::to_string(static_cast<int>(t->dtype())) + "/" + std::to_string(t->rank());
      ValueInfo v;
      v.dtype = t->dtype();
      v.shape = Shape(static_cast<size_t>(t->rank()));  // rank only: any sizes may come
      types.push_back(std::move(v));
    }
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second->graph.lock() == g) return it->second.get();
    // Entries of subgraphs whose models are gone go (their address may come
    // back as another subgraph's: the key is checked against the graph itself).
    std::erase_if(entries_, [](const auto& kv) { return kv.second->graph.expired(); });
    auto e = std::make_unique<Entry>();
    e->graph = g;
    auto ex = Executor::create(subgraph_model(*g, subgraph_opset(node), types), device);
    if (!ex.ok()) return ex.status().with_context(node.describe());
    e->executor = std::move(ex).value();
    // Trips hold their outputs while the next trip runs (scan outputs, carried
    // values): a replay arena would need a fresh block per trip (PlanReplay
    // gives one when an earlier run's view is alive), so outputs come from
    // the caching allocator instead.
    e->executor->use_replay_arena(false);
    auto& slot = entries_[key];
    slot = std::move(e);
    return slot.get();
  }

  std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;
};

// The run options of one trip: the caller's, with a random stream of the
// node's and the trip's own (a Dropout in a Loop's body draws anew each trip).
RunOptions trip_options(const KernelContext& ctx, int64_t trip) {
  RunOptions o;
  o.training = ctx.options().training;
  o.step = ctx.options().step;
  o.seed = ctx.random_seed() ^ (static_cast<uint64_t>(trip) * 0x9E3779B97F4A7C15ull);
  o.op_time_ms = ctx.options().op_time_ms;
  return o;
}

using DevicePtr = std::shared_ptr<Device>;  // the node's device: its subgraphs run there, its outputs live there

constexpr size_t kNotAnInput = SIZE_MAX;  // a value a subgraph returned

// A flag or count the kernel branches on, on the host: the executor's host
// copy of node input `input` when it has one, else a copy (on a GPU this
// waits for the value: control flow decides on the host, as PyTorch's does).
Result<Tensor> on_host(const KernelContext& ctx, const DevicePtr& device, const Tensor& t, size_t input) {
  if (const Tensor* h = input == kNotAnInput ? nullptr : ctx.host_input(input)) return *h;
  return to_host(*device, t);
}

Result<bool> read_flag(const KernelContext& ctx, const DevicePtr& device, const Tensor& t, size_t input,
                       const char* what) {
  if (t.dtype() != DType::kBool || t.numel() != 1)
    return invalid_argument("{}: {} must be one bool, not {} {}", ctx.node().describe(), what, dtype_name(t.dtype()),
                            dims_to_string(t.dims()));
  ASSIGN_OR_RETURN(Tensor h, on_host(ctx, device, t, input));
  return h.data<bool>()[0];
}

// A tensor on the node's device from the executor's allocator.
Result<Tensor> fresh(KernelContext& ctx, DType dtype, Dims dims) {
  Tensor t = ctx.allocate(dtype, std::move(dims));
  if (!t.raw() && t.nbytes() > 0)
    return make_error(ErrorCode::kInternal, "{}: out of device memory for {} {}", ctx.node().describe(),
                      dtype_name(dtype), dims_to_string(t.dims()));
  return t;
}

// Copies `bytes` from `src` at `from` to `dst` at `to` (either on the device),
// through views, so the same code moves host and GPU memory.
Status copy_bytes(Device& device, const Tensor& src, size_t from, const Tensor& dst, size_t to, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  Tensor s(DType::kUInt8, {static_cast<int64_t>(bytes)}, Storage::view(src.storage(), from, bytes));
  Tensor d(DType::kUInt8, {static_cast<int64_t>(bytes)}, Storage::view(dst.storage(), to, bytes));
  return device.copy(s, d);
}

// Slice `index` of x along `axis` (a copy, one dim fewer).
Result<Tensor> take(KernelContext& ctx, const DevicePtr& device, const Tensor& x, size_t axis, int64_t index) {
  Dims dims = x.dims();
  const int64_t len = dims[axis];
  dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(axis));
  ASSIGN_OR_RETURN(Tensor out, fresh(ctx, x.dtype(), dims));
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(x.dtype()));
  for (size_t d = 0; d < axis; ++d) outer *= x.dims()[d];
  for (size_t d = axis + 1; d < x.dims().size(); ++d) inner *= x.dims()[d];
  for (int64_t o = 0; o < outer; ++o)
    RETURN_IF_ERROR(copy_bytes(*device, x, static_cast<size_t>((o * len + index) * inner), out,
                               static_cast<size_t>(o * inner), static_cast<size_t>(inner)));
  return out;
}

// The trips' tensors stacked along a new `axis` (reversed when `reverse`);
// `empty` gives the dims of a stack of no trips.
Result<Tensor> stack(KernelContext& ctx, const DevicePtr& device, size_t k, const std::vector<Tensor>& trips, size_t axis,
                     bool reverse) {
  if (trips.empty()) {
    const OptShape& s = ctx.shapes().output(k).shape;
    Dims dims;
    if (s)
      for (const Dim& d : *s) dims.push_back(d.known() ? d.value : 0);
    if (axis < dims.size()) dims[axis] = 0;
    else dims.insert(dims.begin(), 0);
    return fresh(ctx, ctx.shapes().output(k).dtype, dims);
  }
  const Tensor& first = trips[0];
  for (const Tensor& t : trips)
    if (t.dtype() != first.dtype() || t.dims() != first.dims())
      return shape_error("{}: scan output {} is {} {} in one trip and {} {} in another", ctx.node().describe(), k,
                         dtype_name(first.dtype()), dims_to_string(first.dims()), dtype_name(t.dtype()),
                         dims_to_string(t.dims()));
  const int64_t len = static_cast<int64_t>(trips.size());
  Dims dims = first.dims();
  dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(axis), len);
  ASSIGN_OR_RETURN(Tensor out, fresh(ctx, first.dtype(), dims));
  int64_t outer = 1, inner = static_cast<int64_t>(dtype_size(first.dtype()));
  for (size_t d = 0; d < axis; ++d) outer *= first.dims()[d];
  for (size_t d = axis; d < first.dims().size(); ++d) inner *= first.dims()[d];
  for (int64_t t = 0; t < len; ++t) {
    const int64_t at = reverse ? len - 1 - t : t;
    for (int64_t o = 0; o < outer; ++o)
      RETURN_IF_ERROR(copy_bytes(*device, trips[static_cast<size_t>(t)], static_cast<size_t>(o * inner), out,
                                 static_cast<size_t>((o * len + at) * inner), static_cast<size_t>(inner)));
  }
  return out;
}

// A zero-filled tensor like `like` on the node's device.
Result<Tensor> zeros_like(KernelContext& ctx, const DevicePtr& device, const Tensor& like) {
  Tensor zero = Tensor::host(like.dtype(), like.dims());  // zero-filled
  if (device->kind() == DeviceKind::kCpu) return zero;
  ASSIGN_OR_RETURN(Tensor out, fresh(ctx, like.dtype(), like.dims()));
  RETURN_IF_ERROR(device->copy(zero, out));
  RETURN_IF_ERROR(device->synchronize());  // the host zeros must outlive the copy
  return out;
}

Status run_if(KernelContext& ctx, const DevicePtr& device) {
  ASSIGN_OR_RETURN(bool cond, read_flag(ctx, device, ctx.input(0), 0, "the condition"));
  CertainRuns certain;
  g_work.certain = 1;  // a branch taken now may not be taken in the next trip
  std::vector<const Tensor*> captures;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) captures.push_back(&ctx.input(i));
  ASSIGN_OR_RETURN(auto out, SubgraphExecutors::instance().run(ctx.node(), cond ? "then_branch" : "else_branch",
                                                               captures, trip_options(ctx, 0), device));
  if (out.size() != ctx.num_outputs())
    return invalid_argument("{}: the branch has {} outputs, the node {}", ctx.node().describe(), out.size(),
                            ctx.num_outputs());
  for (size_t i = 0; i < out.size(); ++i) ctx.set_output(i, std::move(out[i]));
  return Status::Ok();
}

Status run_loop(KernelContext& ctx, const DevicePtr& device) {
  const Node& node = ctx.node();
  const size_t c = static_cast<size_t>(num_captures(node));
  if (ctx.num_inputs() < 2 + c || ctx.num_outputs() < ctx.num_inputs() - 2 - c)
    return invalid_argument("{}: inputs and outputs do not fit a Loop", node.describe());
  const size_t n = ctx.num_inputs() - 2 - c;
  const bool has_m = ctx.has_input(0), has_cond = ctx.has_input(1);
  if (!has_m && !has_cond)
    return invalid_argument("{}: a Loop with neither a trip count nor a condition never ends", node.describe());
  const int64_t limit = max_loop_trips();
  int64_t m = limit;
  if (has_m) {
    if (ctx.input(0).numel() != 1 || ctx.input(0).dtype() != DType::kInt64)
      return invalid_argument("{}: the trip count M must be one int64", node.describe());
    ASSIGN_OR_RETURN(Tensor h, on_host(ctx, device, ctx.input(0), 0));
    m = h.data<int64_t>()[0];
  }
  bool cond = true;
  if (has_cond) { ASSIGN_OR_RETURN(cond, read_flag(ctx, device, ctx.input(1), 1, "the condition")); }
  // A fixed trip count is checked against the bound before the first trip,
  // times the trips the enclosing fixed Loops still certainly make.
  CertainRuns certain;
  const bool fixed = has_m && m > 0 && trips_fixed(node, has_cond, cond);
  if (fixed) {
    int64_t all = 0;
    if (__builtin_mul_overflow(m, certain.outer(), &all) || all > max_loop_trips() - g_work.trips)
      return invalid_argument("{}: {} trips of a fixed count (its condition stays true){} are more than the {} trips "
                              "a run's control flow may make in all",
                              node.describe(), m,
                              certain.outer() > 1 ? fmt::format(", each of {} times it certainly runs,", certain.outer())
                                                  : std::string(),
                              max_loop_trips());
  }
  std::vector<Tensor> carried;
  for (size_t i = 0; i < n; ++i) carried.push_back(ctx.input(2 + i));
  const size_t k_out = ctx.num_outputs() - n;
  std::vector<std::vector<Tensor>> scans(k_out);
  int64_t trip = 0;
  const int64_t work_before = g_work.work;
  for (; trip < m && cond; ++trip) {
    if (trip >= limit)
      return invalid_argument("{}: ran {} trips, the most a Loop may, without stopping", node.describe(), trip);
    // Inside a body whose Loop is not fixed, nothing is certain to run again.
    g_work.certain = fixed ? certain.outer() * (m - trip) : 1;  // no overflow: checked above
    // Fresh per trip: a GPU executor may still be copying the last trip's.
    Tensor iter = Tensor::host(DType::kInt64, {}), cond_in = Tensor::host(DType::kBool, {});
    iter.data<int64_t>()[0] = trip;
    cond_in.data<bool>()[0] = cond;
    std::vector<const Tensor*> feeds{&iter, &cond_in};
    for (const Tensor& v : carried) feeds.push_back(&v);
    for (size_t i = 0; i < c; ++i) feeds.push_back(&ctx.input(2 + n + i));
    ASSIGN_OR_RETURN(auto out,
                     SubgraphExecutors::instance().run(node, "body", feeds, trip_options(ctx, trip), device));
    if (out.size() != 1 + ctx.num_outputs())
      return invalid_argument("{}: the body has {} outputs; it needs {}", node.describe(), out.size(),
                              1 + ctx.num_outputs());
    if (has_cond) {
      ASSIGN_OR_RETURN(cond, read_flag(ctx, device, out[0], kNotAnInput, "the body's condition"));
    }
    for (size_t i = 0; i < n; ++i) carried[i] = std::move(out[1 + i]);
    for (size_t k = 0; k < k_out; ++k) scans[k].push_back(std::move(out[1 + n + k]));
    RETURN_IF_ERROR(count_trip(node, carried));
    if (trip == 0 && fixed) RETURN_IF_ERROR(check_projected_work(node, g_work.work - work_before, m, certain.outer()));
  }
  for (size_t i = 0; i < n; ++i) ctx.set_output(i, std::move(carried[i]));
  for (size_t k = 0; k < k_out; ++k) {
    ASSIGN_OR_RETURN(Tensor s, stack(ctx, device, n + k, scans[k], 0, false));
    ctx.set_output(n + k, std::move(s));
  }
  return Status::Ok();
}

Result<size_t> axis_of(const KernelContext& ctx, int64_t axis, int64_t rank) {
  ASSIGN_OR_RETURN(int64_t a, normalize_axis(axis, rank, ctx.node()));
  return static_cast<size_t>(a);
}

// One sequence of a Scan: `length` steps over `scans` along `axes` (reversed
// where `dirs` says), from `state`; the body's captures are the node's inputs
// from `first_capture` on. Leaves the final state and each step's outputs.
struct ScanSteps {
  std::vector<Tensor> state;
  std::vector<std::vector<Tensor>> outputs;  // per scan output, per step
};

Result<ScanSteps> scan_steps(KernelContext& ctx, const DevicePtr& device, std::vector<Tensor> state,
                             const std::vector<const Tensor*>& scans, const std::vector<size_t>& axes,
                             const std::vector<int64_t>& dirs, int64_t length, size_t first_capture) {
  const Node& node = ctx.node();
  const size_t n = state.size(), k_out = ctx.num_outputs() - n;
  ScanSteps r{std::move(state), std::vector<std::vector<Tensor>>(k_out)};
  const int64_t work_before = g_work.work;
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> elements;
    // (A reversed scan starts at the end of this sequence's own length.)
    for (size_t j = 0; j < scans.size(); ++j) {
      ASSIGN_OR_RETURN(Tensor e, take(ctx, device, *scans[j], axes[j], dirs[j] ? length - 1 - t : t));
      elements.push_back(std::move(e));
    }
    std::vector<const Tensor*> feeds;
    for (const Tensor& s : r.state) feeds.push_back(&s);
    for (const Tensor& e : elements) feeds.push_back(&e);
    for (size_t i = first_capture; i < ctx.num_inputs(); ++i) feeds.push_back(&ctx.input(i));
    ASSIGN_OR_RETURN(auto out, SubgraphExecutors::instance().run(node, "body", feeds, trip_options(ctx, t), device));
    if (out.size() != ctx.num_outputs())
      return invalid_argument("{}: the body has {} outputs, the node {}", node.describe(), out.size(),
                              ctx.num_outputs());
    for (size_t i = 0; i < n; ++i) r.state[i] = std::move(out[i]);
    for (size_t k = 0; k < k_out; ++k) r.outputs[k].push_back(std::move(out[n + k]));
    RETURN_IF_ERROR(count_trip(node, r.state));
    // (The Scan's enclosing Loops are not multiplied in: it counts step by step.)
    if (t == 0) RETURN_IF_ERROR(check_projected_work(node, g_work.work - work_before, length, 1));
  }
  return r;
}

// Scan before opset 9: (sequence_lens, state..., scans..., captures...), every
// operand with a batch axis first and the scans' sequence axis second; each
// batch entry scans its own length, and its scan outputs are zero past it.
Status run_scan8(KernelContext& ctx, const DevicePtr& device) {
  const Node& node = ctx.node();
  const size_t c = static_cast<size_t>(num_captures(node));
  const int64_t scans_attr = node.attr_int("num_scan_inputs", 1);
  if (scans_attr < 1 || ctx.num_inputs() < 1 + static_cast<size_t>(scans_attr) + c)
    return invalid_argument("{}: inputs do not fit num_scan_inputs {}", node.describe(), scans_attr);
  const size_t m = static_cast<size_t>(scans_attr);
  const size_t n = ctx.num_inputs() - 1 - m - c;
  if (ctx.num_outputs() < n) return invalid_argument("{}: fewer outputs than states", node.describe());
  const size_t k_out = ctx.num_outputs() - n;
  auto dirs = node.attr_ints("directions", std::vector<int64_t>(m, 0));
  if (dirs.size() != m) return invalid_argument("{}: one direction per scan input is needed", node.describe());
  int64_t batch = -1, seq = -1;
  for (size_t j = 0; j < m; ++j) {
    const Tensor& x = ctx.input(1 + n + j);
    if (x.rank() < 2 || (batch >= 0 && (x.dims()[0] != batch || x.dims()[1] != seq)))
      return shape_error("{}: scan input {} {} is not [batch, sequence, ...] as the others", node.describe(), j,
                         dims_to_string(x.dims()));
    batch = x.dims()[0];
    seq = x.dims()[1];
  }
  // An empty operand may still name 2^40 rows: bound the work before any of it.
  if (batch > max_loop_trips() || (batch > 0 && seq > max_loop_trips() / batch))
    return invalid_argument("{}: {} sequences of {} steps; a Scan may take at most {} steps", node.describe(), batch,
                            seq, max_loop_trips());
  for (size_t i = 0; i < n; ++i)
    if (ctx.input(1 + i).rank() < 1 || ctx.input(1 + i).dims()[0] != batch)
      return shape_error("{}: state {} has no batch axis of {}", node.describe(), i, batch);
  std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
  if (ctx.has_input(0)) {
    ASSIGN_OR_RETURN(Tensor h, on_host(ctx, device, ctx.input(0), 0));
    lens = h.to_int64_vector();
    if (static_cast<int64_t>(lens.size()) != batch)
      return shape_error("{}: {} sequence lengths for a batch of {}", node.describe(), lens.size(), batch);
    for (int64_t l : lens)
      if (l < 0 || l > seq) return invalid_argument("{}: sequence length {} outside [0, {}]", node.describe(), l, seq);
  }
  std::vector<std::vector<Tensor>> states(n), outputs(k_out);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> state, rows;
    for (size_t i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(Tensor t, take(ctx, device, ctx.input(1 + i), 0, b));
      state.push_back(std::move(t));
    }
    for (size_t j = 0; j < m; ++j) {
      ASSIGN_OR_RETURN(Tensor t, take(ctx, device, ctx.input(1 + n + j), 0, b));
      rows.push_back(std::move(t));
    }
    std::vector<const Tensor*> scans;
    for (const Tensor& r : rows) scans.push_back(&r);
    ASSIGN_OR_RETURN(ScanSteps r, scan_steps(ctx, device, std::move(state), scans, std::vector<size_t>(m, 0), dirs,
                                             lens[static_cast<size_t>(b)], 1 + n + m));
    for (size_t i = 0; i < n; ++i) states[i].push_back(std::move(r.state[i]));
    for (size_t k = 0; k < k_out; ++k) {
      std::vector<Tensor>& steps = r.outputs[k];
      if (steps.empty()) return unsupported("{}: a sequence of length 0 in batch form", node.describe());
      while (static_cast<int64_t>(steps.size()) < seq) {  // zeros past this entry's length
        ASSIGN_OR_RETURN(Tensor zero, zeros_like(ctx, device, steps[0]));
        steps.push_back(std::move(zero));
      }
      ASSIGN_OR_RETURN(Tensor stacked, stack(ctx, device, n + k, steps, 0, false));
      outputs[k].push_back(std::move(stacked));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(Tensor s, stack(ctx, device, i, states[i], 0, false));
    ctx.set_output(i, std::move(s));
  }
  for (size_t k = 0; k < k_out; ++k) {
    ASSIGN_OR_RETURN(Tensor s, stack(ctx, device, n + k, outputs[k], 0, false));
    ctx.set_output(n + k, std::move(s));
  }
  return Status::Ok();
}

Status run_scan(KernelContext& ctx, const DevicePtr& device) {
  const Node& node = ctx.node();
  if (subgraph_opset(node) < 9) return run_scan8(ctx, device);
  const size_t c = static_cast<size_t>(num_captures(node));
  const int64_t scans_attr = node.attr_int("num_scan_inputs", 1);
  if (scans_attr < 1 || ctx.num_inputs() < static_cast<size_t>(scans_attr) + c)
    return invalid_argument("{}: inputs do not fit num_scan_inputs {}", node.describe(), scans_attr);
  const size_t m = static_cast<size_t>(scans_attr);
  const size_t n = ctx.num_inputs() - m - c;
  if (ctx.num_outputs() < n) return invalid_argument("{}: fewer outputs than states", node.describe());
  const size_t k_out = ctx.num_outputs() - n;
  auto in_axes = node.attr_ints("scan_input_axes", std::vector<int64_t>(m, 0));
  auto in_dirs = node.attr_ints("scan_input_directions", std::vector<int64_t>(m, 0));
  auto out_axes = node.attr_ints("scan_output_axes", std::vector<int64_t>(k_out, 0));
  auto out_dirs = node.attr_ints("scan_output_directions", std::vector<int64_t>(k_out, 0));
  if (in_axes.size() != m || in_dirs.size() != m || out_axes.size() != k_out || out_dirs.size() != k_out)
    return invalid_argument("{}: one axis and direction per scan input and output is needed", node.describe());
  std::vector<size_t> axes;
  std::vector<const Tensor*> scans;
  int64_t length = -1;
  for (size_t j = 0; j < m; ++j) {
    const Tensor& x = ctx.input(n + j);
    ASSIGN_OR_RETURN(size_t a, axis_of(ctx, in_axes[j], x.rank()));
    axes.push_back(a);
    scans.push_back(&x);
    if (length >= 0 && x.dims()[a] != length)
      return shape_error("{}: scan input {} has {} steps, the first {}", node.describe(), j, x.dims()[a], length);
    length = x.dims()[a];
  }
  if (length > max_loop_trips())
    return invalid_argument("{}: a sequence of {} steps; a Scan may take at most {}", node.describe(), length,
                            max_loop_trips());
  std::vector<Tensor> state;
  for (size_t i = 0; i < n; ++i) state.push_back(ctx.input(i));
  ASSIGN_OR_RETURN(ScanSteps r, scan_steps(ctx, device, std::move(state), scans, axes, in_dirs, length, n + m));
  for (size_t i = 0; i < n; ++i) ctx.set_output(i, std::move(r.state[i]));
  for (size_t k = 0; k < k_out; ++k) {
    const int64_t rank = r.outputs[k].empty() ? 0 : r.outputs[k][0].rank();
    ASSIGN_OR_RETURN(size_t a, axis_of(ctx, out_axes[k], rank + 1));
    ASSIGN_OR_RETURN(Tensor s, stack(ctx, device, n + k, r.outputs[k], a, out_dirs[k] != 0));
    ctx.set_output(n + k, std::move(s));
  }
  return Status::Ok();
}

// The caller's device: the executor's (its GPU, with its settings), or the
// host's where no executor runs the kernel (constant folding).
Result<DevicePtr> device_of(const KernelContext& ctx) {
  if (ctx.device()) return ctx.device();
  return get_device(DeviceKind::kCpu);
}

}  // namespace

Status if_kernel(KernelContext& ctx) {
  WorkScope scope;
  ASSIGN_OR_RETURN(DevicePtr device, device_of(ctx));
  return run_if(ctx, device);
}

Status loop_kernel(KernelContext& ctx) {
  WorkScope scope;
  ASSIGN_OR_RETURN(DevicePtr device, device_of(ctx));
  return run_loop(ctx, device);
}

Status scan_kernel(KernelContext& ctx) {
  WorkScope scope;
  CertainRuns certain;
  g_work.certain = 1;  // counted step by step (not multiplied into nested Loops' checks)
  ASSIGN_OR_RETURN(DevicePtr device, device_of(ctx));
  return run_scan(ctx, device);
}

}  // namespace ort_train
