#include "runtime/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <unordered_map>

#include "graph/op_schema.h"
#include "runtime/control_flow_kernels.h"
#include "runtime/cpu/host_memory.h"
#include "runtime/plan_placement.h"
#include "runtime/run_values.h"

namespace ort_train {

namespace {

// A host copy of an initializer that shape rules may read (the data of the
// value they need: a Reshape shape, Slice starts, a Range bound). Float
// tensors beyond a few elements are parameters, never read by a rule, and
// their host copy would go stale as the optimizer updates the device copy.
bool keep_host_copy(const Tensor& t) {
  return t.device() == DeviceKind::kCpu && (is_integer_or_bool(t.dtype()) || t.numel() <= 16);
}

Status with_node(const PlanStep& step, const Status& st) {
  if (st.ok()) return st;
  return st.message().find(step.node->name) == std::string::npos ? st.with_context(step.node->describe()) : st;
}

// Runs the step's shape rule; every output it leaves must be fully known. A
// rule that asked for an input's data its op does not declare
// (kRuleReadsInput) is a registration bug that a GPU plan would miss.
Status run_rule(const PlanStep& step, InferContext& ictx) {
  Status st = step.schema->infer(ictx);
  if (const uint64_t undeclared = ictx.values_wanted() & ~rule_data_inputs(step.schema->traits)) {
    return make_error(ErrorCode::kInternal,
                      "{}: the shape rule reads the data of input {}, which {}'s registration does not declare "
                      "(kRuleReadsInput)",
                      step.node->describe(), __builtin_ctzll(undeclared), step.node->op_type);
  }
  RETURN_IF_ERROR(st);
  if (step.schema->traits & kShapedByKernel) return Status::Ok();
  for (size_t i = 0; i < step.outputs.size(); ++i)
    if (step.outputs[i] >= 0 && (!ictx.output(i).shape || !shape_fully_known(*ictx.output(i).shape)))
      return make_error(ErrorCode::kInternal, "{}: the shape rule left output {} unknown at run time",
                        step.node->describe(), i);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Executor>> Executor::create(const Model& model, std::shared_ptr<Device> device,
                                                   const Executor* constants_from) {
  if (!device) {
    ASSIGN_OR_RETURN(device, get_device(DeviceKind::kCpu));
  }
  std::unique_ptr<Executor> ex(new Executor(model, std::move(device)));
  ex->use_arena_ = ex->device_->kind() != DeviceKind::kCpu;
  if (ex->device_->kind() != DeviceKind::kCpu) {
    ASSIGN_OR_RETURN(ex->host_device_, get_device(DeviceKind::kCpu));
  } else {
    ex->host_device_ = ex->device_;
  }
  ASSIGN_OR_RETURN(ex->plan_, build_execution_plan(ex->model_, ex->device_->kind()));
  ex->values_ = RunValues(ex->plan_.slot_names.size(), ex->device_->kind() == DeviceKind::kCpu);
  RETURN_IF_ERROR(ex->bind_constants(constants_from));
  ex->place();
  return ex;
}

void Executor::place() {
  if (device_->kind() == DeviceKind::kCpu) return;
  std::vector<bool> host_copies(plan_.slot_names.size(), false);
  for (int s : plan_.constant_slots) host_copies[s] = host_constants_[s].defined();
  place_steps(plan_, model_.graph, host_copies);
}

Status Executor::bind_constants(const Executor* constants_from) {
  if (device_->kind() == DeviceKind::kCpu) return Status::Ok();  // the model's own tensors, bound per run
  size_t n = plan_.slot_names.size();
  device_constants_.assign(n, Tensor());
  host_constants_.assign(n, Tensor());
  uploads_.assign(n, Upload{});
  for (int s : plan_.constant_slots) {
    const std::string& name = plan_.slot_names[s];
    const Tensor& host = model_.graph.initializers.at(name);
    if (keep_host_copy(host)) host_constants_[s] = host;
    if (constants_from && constants_from->device_->kind() == device_->kind()) {
      auto shared = constants_from->constant(name);
      if (shared.ok() && shared->dims() == host.dims() && shared->dtype() == host.dtype()) {
        device_constants_[s] = *shared;
        continue;
      }
    }
    ASSIGN_OR_RETURN(device_constants_[s], to_device(*device_, host));
  }
  return Status::Ok();
}

void Executor::forget_host_copies(const std::vector<std::string>& names) {
  changing_.resize(plan_.slot_names.size(), false);
  for (const std::string& n : names) {
    auto it = plan_.slots.find(n);
    if (it != plan_.slots.end()) changing_[it->second] = true;
  }
  replay_.forget();  // recorded answers may have read them
  if (host_constants_.empty()) return;
  for (const std::string& n : names) {
    auto it = plan_.slots.find(n);
    if (it != plan_.slots.end()) host_constants_[it->second] = Tensor();
  }
  place();  // steps that read those host copies run elsewhere now
}

Result<Tensor> Executor::constant(const std::string& name) const {
  auto it = plan_.slots.find(name);
  if (it == plan_.slots.end() || !model_.graph.is_initializer(name))
    return invalid_argument("'{}' is not an initializer of the model", name);
  if (device_->kind() == DeviceKind::kCpu) return model_.graph.initializers.at(name);
  return device_constants_[it->second];
}

std::map<std::string, size_t> Executor::output_ready_steps() const {
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < plan_.steps.size(); ++i)
    for (int s : plan_.steps[i].ready) at[plan_.slot_names[s]] = i;
  return at;
}

Status Executor::bind_output(const std::string& name, Tensor dest) {
  return bound_.bind(plan_, device_->kind(), name, std::move(dest), false);
}

Status Executor::bind_state_output(const std::string& name, Tensor dest) {
  return bound_.bind(plan_, device_->kind(), name, std::move(dest), true);
}

Status Executor::check_feeds(const std::map<std::string, Tensor>& feeds) const {
  return check_graph_feeds(model_.graph, feeds);
}

Status check_graph_feeds(const Graph& g, const std::map<std::string, Tensor>& feeds) {
  std::unordered_map<std::string, int64_t> bound;  // symbolic dim -> size seen
  for (const auto& [name, t] : feeds) {
    bool known = false;
    for (const ValueInfo& v : g.inputs) known = known || v.name == name;
    if (!known) {
      std::string names;
      for (const ValueInfo* v : g.required_inputs()) names += (names.empty() ? "" : ", ") + v->name;
      return invalid_argument("'{}' is not an input of the model (its inputs: {})", name, names);
    }
  }
  for (const ValueInfo& v : g.inputs) {
    auto it = feeds.find(v.name);
    if (it == feeds.end()) {
      if (g.is_initializer(v.name)) continue;
      return invalid_argument("missing input '{}' ({} {})", v.name, dtype_name(v.dtype), shape_to_string(v.shape));
    }
    const Tensor& t = it->second;
    if (v.dtype != DType::kUndefined && t.dtype() != v.dtype)
      return invalid_argument("input '{}': expected dtype {}, got {}", v.name, dtype_name(v.dtype),
                              dtype_name(t.dtype()));
    if (!v.shape) continue;
    bool ok = v.shape->size() == t.dims().size();
    for (size_t k = 0; ok && k < v.shape->size(); ++k) {
      const Dim& d = (*v.shape)[k];
      if (d.known()) ok = d.value == t.dims()[k];
      else if (!d.symbol.empty()) {
        auto [b, inserted] = bound.emplace(d.symbol, t.dims()[k]);
        ok = inserted || b->second == t.dims()[k];
      }
    }
    if (!ok)
      return shape_error("input '{}': expected shape {}, got {}", v.name, shape_to_string(v.shape),
                         dims_to_string(t.dims()));
  }
  return Status::Ok();
}

Status Executor::bind_feeds(const std::map<std::string, Tensor>& feeds, RunValues& values) {
  if (values.on_cpu) {
    for (int s : plan_.constant_slots) values.bind(s, model_.graph.initializers.at(plan_.slot_names[s]));
  } else {
    for (int s : plan_.constant_slots) {
      values.bind(s, device_constants_[s]);
      values.host[s] = host_constants_[s];
    }
  }
  for (const auto& [name, t] : feeds) {
    int s = plan_.slots.at(name);
    if (values.on_cpu) {
      values.bind(s, t);
    } else if (t.device() == device_->kind()) {
      RETURN_IF_ERROR(device_->await(t));  // a batch staged ahead (copy stream) must have arrived
      values.bind(s, t);
    } else {
      ASSIGN_OR_RETURN(Tensor d, to_device(*device_, t));
      values.bind(s, std::move(d));
      values.host[s] = t;  // the caller's host tensor: rules may read it
    }
  }
  return Status::Ok();
}

Result<std::map<std::string, Tensor>> Executor::run(const std::map<std::string, Tensor>& feeds,
                                                    const RunOptions& options,
                                                    const std::vector<std::string>& fetch) {
  RETURN_IF_ERROR(check_feeds(feeds));
  // The run's values belong to the caller after it, or to nobody, even when it fails.
  struct ClearAfter {
    RunValues& values;
    ~ClearAfter() { values.clear(); }
  } clear_after{values_};
  RunValues& values = values_;
  RETURN_IF_ERROR(bind_feeds(feeds, values));
  std::vector<int> fetch_slots;
  for (const std::string& f : fetch) {
    auto it = plan_.slots.find(f);
    if (it == plan_.slots.end()) return invalid_argument("cannot fetch '{}': no such value in the graph", f);
    fetch_slots.push_back(it->second);
    values.keep[it->second] = true;
  }
  // Replay the recorded answers when the feeds have the recorded dtypes and
  // dims; otherwise record anew (see PlanReplay).
  std::vector<std::pair<DType, Dims>> feed_shapes;
  for (int s : plan_.feed_slots) feed_shapes.emplace_back(values.slots[s].dtype(), values.slots[s].dims());
  replay_.begin(std::move(feed_shapes), plan_, changing_);
  replay_.start_arena(*allocator_, use_arena_);
  replayed_steps_ = 0;
  arena_outputs_ = 0;
  for (size_t i = 0; i < plan_.steps.size(); ++i) RETURN_IF_ERROR(run_step(i, values, options));
  replay_.finish(plan_.steps.size());
  std::map<std::string, Tensor> out;
  if (fetch.empty()) {
    for (const ValueInfo& o : model_.graph.outputs) out[o.name] = values.slots[plan_.slots.at(o.name)];
  } else {
    for (size_t i = 0; i < fetch.size(); ++i) out[fetch[i]] = values.slots[fetch_slots[i]];
  }
  return out;
}

Status Executor::run_step(size_t i, RunValues& values, const RunOptions& options) {
  const PlanStep& step = plan_.steps[i];
  for (int s : step.inputs)
    if (s >= 0 && !values.slots[s].defined())
      return make_error(ErrorCode::kInternal, "{}: input '{}' has no value at run time", step.node->describe(),
                        plan_.slot_names[s]);
  // The plan's copies to the host before this step: a host step's inputs, the data its rule reads.
  if (!plan_.copies.empty())
    for (int s : plan_.copies[i].fetch) RETURN_IF_ERROR(with_node(step, values.fetch_host(s, *device_)));
  std::optional<InferContext> rule_answer;  // the rule's answer, when the step does not replay one
  ASSIGN_OR_RETURN(const InferContext* answer, step_shapes(i, values, rule_answer));
  if (!replay_.replaying()) replay_.record(i, step, *answer);
  if (step.place == StepPlace::kRule) {
    RETURN_IF_ERROR(bind_rule_values(step, *answer, values));
  } else {
    RETURN_IF_ERROR(run_kernel(i, *answer, values, options));
  }
  RETURN_IF_ERROR(deliver_bound_outputs(step, values, options));
  if (options.on_output_ready)
    for (int s : step.ready) RETURN_IF_ERROR(options.on_output_ready(plan_.slot_names[s], values.slots[s]));
  for (int s : step.release) values.release(s);
  // (Not told to the replay: a freed output's arena block is found free a
  // few steps late, which costs arena bytes, never a wrong overlap.)
  if (options.release_outputs)
    for (int s : step.outputs_done) values.release(s);
  replay_.end_step(i, step.release);
  return Status::Ok();
}

// The step's output dtypes and shapes: the recorded answer when replaying,
// else its shape rule's, which reads the host copies of the values whose
// data it needs (the plan fetched those that lived on the device only).
Result<const InferContext*> Executor::step_shapes(size_t i, RunValues& values, std::optional<InferContext>& answer) {
  const PlanStep& step = plan_.steps[i];
  if (const PlanReplay::StepRecord* record = replay_.replayed(i)) {
    ++replayed_steps_;
    return record->shapes.get();
  }
  answer.emplace(*step.node, step.opset, values.infer_inputs(step));
  RETURN_IF_ERROR(with_node(step, run_rule(step, *answer)));
  RETURN_IF_ERROR(with_node(step, check_output_sizes(*answer, *step.node, device_->memory_budget())));
  return &*answer;
}

// A step the plan gave to its rule (Shape, Size, Constant): the rule's values are its outputs.
Status Executor::bind_rule_values(const PlanStep& step, const InferContext& answer, RunValues& values) {
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    if (step.outputs[k] < 0) continue;
    if (!answer.output(k).value)
      return make_error(ErrorCode::kInternal, "{}: the shape rule computed no value for output {}",
                        step.node->describe(), k);
    values.bind(step.outputs[k], *answer.output(k).value);
  }
  return Status::Ok();
}

namespace {

// "MatMul [8,128,256] [256,1024]" (an omitted optional input is "-"): the
// key of the profile by op and input shapes.
std::string op_and_input_shapes(const KernelContext& kctx) {
  std::string key = kctx.node().op_type;
  for (size_t i = 0; i < kctx.num_inputs(); ++i)
    key += kctx.has_input(i) ? " " + dims_to_string(kctx.input(i).dims()) : std::string(" -");
  return key;
}

}  // namespace

Status Executor::run_kernel(size_t i, const InferContext& answer, RunValues& values, const RunOptions& options) {
  const PlanStep& step = plan_.steps[i];
  const bool on_host = step.place == StepPlace::kHost;
  const bool on_device = !values.on_cpu && !on_host;
  std::vector<Tensor> uploaded;  // sized on the first upload (a GPU executor's host values)
  ASSIGN_OR_RETURN(std::vector<const Tensor*> inputs, kernel_inputs(step, values, uploaded));
  const KernelDef* kernel = on_host ? step.host_kernel : step.kernel;
  Allocator& alloc = on_host ? *host_allocator_ : *allocator_;
  KernelContext kctx(*step.node, step.opset, std::move(inputs), answer, alloc, options, i);
  kctx.set_device(on_host ? host_device_ : device_);
  if (on_device) {
    std::vector<const Tensor*> host_inputs;
    for (int s : step.inputs) host_inputs.push_back(s >= 0 && values.host[s].defined() ? &values.host[s] : nullptr);
    kctx.set_host_inputs(std::move(host_inputs));
  }
  const bool shaped_by_kernel = (step.schema->traits & kShapedByKernel) != 0;
  if (!shaped_by_kernel) preset_outputs(i, *kernel, answer, values, options, kctx);
  auto started = std::chrono::steady_clock::now();
  Status st = Status::Ok();
  try {
    st = kernel->fn(kctx);
  } catch (const std::bad_alloc&) {  // host memory for an output or scratch (Storage::host, KernelContext::allocate)
    st = out_of_host_memory();
  }
  // Profiling a GPU run waits for each kernel, so the time is the kernel's, not its launch's.
  if (options.op_time_ms && on_device && st.ok()) st = device_->synchronize();
  if (options.op_time_ms) {
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    (*options.op_time_ms)[step.node->op_type] += ms;
    if (options.op_shape_time_ms) (*options.op_shape_time_ms)[op_and_input_shapes(kctx)] += ms;
  }
  if (!st.ok()) return with_node(step, st);
  note_control_flow_work(kctx);  // inside an If/Loop/Scan body: its bound on work
  for (size_t k = 0; k < step.outputs.size(); ++k) {
    int s = step.outputs[k];
    if (s < 0) continue;
    Tensor& t = kctx.outputs()[k];
    if (!t.defined()) {
      if (shaped_by_kernel)
        return make_error(ErrorCode::kInternal, "{}: the kernel left output {} unset", step.node->describe(), k);
      if (answer.output(k).value) t = *answer.output(k).value;  // the rule already computed it
      else t = kctx.output(k);                                  // an empty or untouched output
    }
    values.bind(s, std::move(t));
    // Recording: an output taken fresh from the device allocator gets an arena slot.
    if (!on_host) replay_.note_output(i, k, s, values.slots[s], kctx.allocated_output(k));
  }
  return Status::Ok();
}

// The tensors the kernel reads: where they live for a CPU executor; the host
// copies for a host step; else the device values, with the host values the
// plan lists for upload copied over (cached per slot).
Result<std::vector<const Tensor*>> Executor::kernel_inputs(const PlanStep& step, RunValues& values,
                                                           std::vector<Tensor>& uploaded) {
  std::vector<const Tensor*> inputs;
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    int s = step.inputs[k];
    if (s < 0) {
      inputs.push_back(nullptr);
    } else if (values.on_cpu) {
      inputs.push_back(&values.slots[s]);
    } else if (step.place == StepPlace::kHost) {
      if (!values.host[s].defined())
        return make_error(ErrorCode::kInternal, "{}: the plan left input '{}' without a host copy",
                          step.node->describe(), plan_.slot_names[s]);
      inputs.push_back(&values.host[s]);
    } else if (values.slots[s].device() == device_->kind()) {
      inputs.push_back(&values.slots[s]);  // not copied: a dying input stays reusable in place
    } else {
      // A host value: one the plan lists in its copies' upload, or a host tensor a
      // device kernel returned, which no plan can foresee.
      if (uploaded.empty()) uploaded.resize(step.inputs.size());  // sized once, before any pointer into it
      ASSIGN_OR_RETURN(uploaded[k], upload(s, values.slots[s]));
      inputs.push_back(&uploaded[k]);
    }
  }
  return inputs;
}

// Where the kernel writes, decided before it runs: replayed outputs at their
// arena offsets, an input dying here reused in place, bound outputs in their
// destination.
void Executor::preset_outputs(size_t i, const KernelDef& kernel, const InferContext& answer, RunValues& values,
                              const RunOptions& options, KernelContext& kctx) {
  const PlanStep& step = plan_.steps[i];
  const bool on_host = step.place == StepPlace::kHost;
  if (!on_host) arena_outputs_ += replay_.preset_outputs(i, answer, kctx);
  if (kernel.may_reuse_input) {
    // An input dying here whose storage nobody else holds (not a feed, an
    // initializer, a fetched value or the source of a live view).
    const DeviceKind where = on_host ? DeviceKind::kCpu : device_->kind();
    for (int s : step.release) {
      const Tensor& t = values.slots[s];
      if (values.keep[s] || !t.storage() || t.storage().use_count() != 1 || t.device() != where ||
          t.dtype() != answer.output(0).dtype || values.shapes[s] != answer.output(0).shape)
        continue;
      if (std::find(step.inputs.begin(), step.inputs.end(), s) != step.inputs.end()) {
        kctx.set_reusable_input(&t);
        break;
      }
    }
  }
  if (!bound_.empty() && !on_host) bound_.preset(step, answer, options, kctx);
}

// Bound outputs end in their destination: written there already, or copied or added now.
Status Executor::deliver_bound_outputs(const PlanStep& step, RunValues& values, const RunOptions& options) {
  if (bound_.empty()) return Status::Ok();
  for (int s : step.outputs) {
    if (!bound_.destination(s)) continue;
    auto delivered = bound_.deliver(s, plan_.slot_names[s], values.slots[s], *device_, options);
    if (!delivered.ok()) return with_node(step, delivered.status());
    values.bind(s, std::move(*delivered));
  }
  return Status::Ok();
}

// The device copy of a host value, cached per slot: a tensor the rule hands
// out every run (a Constant's value: the same storage, held here so it cannot
// be recycled) is uploaded once; a small recomputed one (shape arithmetic)
// again only when its bytes change.
Result<Tensor> Executor::upload(int s, const Tensor& t) {
  Upload& u = uploads_[s];
  bool same_shape = u.device.defined() && u.device.dims() == t.dims() && u.device.dtype() == t.dtype();
  if (same_shape && u.source == t.storage()) return u.device;
  if (t.nbytes() > (size_t{64} << 10)) {
    ASSIGN_OR_RETURN(u.device, to_device(*device_, t));
    u.source = t.storage();
    u.bytes.clear();
    return u.device;
  }
  const auto* p = static_cast<const uint8_t*>(t.raw());
  if (!same_shape || u.bytes.size() != t.nbytes() || !std::equal(u.bytes.begin(), u.bytes.end(), p)) {
    u.bytes.assign(p, p + t.nbytes());
    ASSIGN_OR_RETURN(u.device, to_device(*device_, t));
  }
  u.source = t.storage();
  return u.device;
}

}  // namespace ort_train
