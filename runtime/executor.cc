#include "runtime/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <unordered_map>

#include "graph/op_schema.h"
#include "graph/passes/op_traits.h"
#include "graph/shape_inference.h"
#include "runtime/vector_ops.h"

namespace ort_train {

Status check_tensor_io(const Graph& g) {
  for (const auto* list : {&g.inputs, &g.outputs})
    for (const ValueInfo& v : *list)
      if (!v.non_tensor_type.empty())
        return unsupported("graph {} '{}' has a non-tensor type (sequence, optional or map), which is not supported",
                           list == &g.inputs ? "input" : "output", v.name);
  return Status::Ok();
}

namespace {

// Whether a bound output is added into its destination this run. 16-bit
// float destinations are always written: their sum over micro-batches is
// kept in float32 by the caller (the trainer's master gradients).
bool adds_into(const RunOptions& options, const Tensor& dest) {
  return options.accumulate_bound_outputs && !dtype_is_half(dest.dtype());
}

size_t round_to_64(size_t bytes) { return (bytes + 63) / 64 * 64; }

bool is_integer_or_bool(DType t) { return dtype_is_integer(t) || t == DType::kBool; }

// A host copy of an initializer that shape rules may read (the data of the
// value they need: a Reshape shape, Slice starts, a Range bound). Float
// tensors beyond a few elements are parameters, never read by a rule, and
// their host copy would go stale as the optimizer updates the device copy.
bool keep_host_copy(const Tensor& t) {
  return t.device() == DeviceKind::kCpu && (is_integer_or_bool(t.dtype()) || t.numel() <= 16);
}

// Host-side shape arithmetic on a GPU executor is limited to small integer outputs.
constexpr int64_t kMaxHostOutputElements = 4096;
// A shape rule that needs an integer or bool input's data (NonZero's count,
// computation_reduction's labelled rows) gets it copied over up to this size.
constexpr int64_t kMaxHostFetchElements = int64_t{1} << 22;

// Each output's bytes, computed in 64 bits with overflow checks, against the
// device's memory: shapes come from files (a ConstantOfShape of [2^30, 2^30],
// an Expand to a huge shape), and a kernel must never be handed an
// allocation that could not be made.
Status check_output_bytes(const Node& node, size_t i, DType dtype, const Shape& shape, uint64_t budget) {
  if (!shape_fully_known(shape) || dtype_size(dtype) == 0) return Status::Ok();
  auto bytes = checked_nbytes(dtype, dims_from_shape(shape));
  if (!bytes || (budget > 0 && *bytes > budget))
    return invalid_argument("{}: output {} of shape {} ({}) needs {} bytes, more than the memory budget of {} bytes",
                            node.describe(), i, shape_to_string(shape), dtype_name(dtype),
                            bytes ? std::to_string(*bytes) : std::string("over 2^64"), budget);
  return Status::Ok();
}

Status check_output_sizes(const InferContext& ictx, const Node& node, uint64_t budget) {
  for (size_t i = 0; i < ictx.num_outputs(); ++i) {
    const auto& o = ictx.output(i);
    if (o.shape) RETURN_IF_ERROR(check_output_bytes(node, i, o.dtype, *o.shape, budget));
  }
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
  RETURN_IF_ERROR(ex->build_plan(ex->device_->kind()));
  RETURN_IF_ERROR(ex->bind_constants(constants_from));
  return ex;
}

Status check_kernels(const Model& model, DeviceKind device) {
  ASSIGN_OR_RETURN(auto cpu, get_device(DeviceKind::kCpu));
  Executor probe(model, cpu);
  return probe.build_plan(device);
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
  replay_ = Replay{};  // recorded answers may have read them
  if (host_constants_.empty()) return;
  for (const std::string& n : names) {
    auto it = plan_.slots.find(n);
    if (it != plan_.slots.end()) host_constants_[it->second] = Tensor();
  }
}

Result<Tensor> Executor::constant(const std::string& name) const {
  auto it = plan_.slots.find(name);
  if (it == plan_.slots.end() || !model_.graph.is_initializer(name))
    return invalid_argument("'{}' is not an initializer of the model", name);
  if (device_->kind() == DeviceKind::kCpu) return model_.graph.initializers.at(name);
  return device_constants_[it->second];
}

Status Executor::build_plan(DeviceKind device) {
  if (device == DeviceKind::kCuda) has_cuda_kernels();  // loads the CUDA plugin, whose kernels register themselves
  RETURN_IF_ERROR(check_ops_known(model_));
  const Graph& g = model_.graph;
  RETURN_IF_ERROR(check_tensor_io(g));
  auto slot_of = [&](const std::string& name) {
    auto [it, inserted] = plan_.slots.emplace(name, static_cast<int>(plan_.slot_names.size()));
    if (inserted) plan_.slot_names.push_back(name);
    return it->second;
  };
  for (const auto& [name, t] : g.initializers) plan_.constant_slots.push_back(slot_of(name));
  for (const ValueInfo& v : g.inputs)
    if (!g.is_initializer(v.name)) plan_.feed_slots.push_back(slot_of(v.name));

  std::vector<std::string> missing;
  for (const Node& n : g.nodes) {
    PlanStep s;
    s.node = &n;
    s.opset = model_.opset(n.domain);
    s.schema = OpRegistry::instance().find(n.domain, n.op_type, s.opset);
    DType key = kernel_key_dtype(g, n);
    s.kernel = KernelRegistry::instance().find(n.domain, n.op_type, s.opset, device, key);
    if (device != DeviceKind::kCpu) {
      // Shape arithmetic (integer outputs: Shape, Gather of dims, Concat of
      // sizes) may run on the host from the CPU kernel when its inputs are host values.
      bool integer_outputs = !n.outputs.empty();
      for (const std::string& out : n.outputs) {
        const ValueInfo* v = out.empty() ? nullptr : g.value(out);
        integer_outputs = integer_outputs && (out.empty() || (v && is_integer_or_bool(v->dtype)));
      }
      if (integer_outputs)
        s.host_kernel = KernelRegistry::instance().find(n.domain, n.op_type, s.opset, DeviceKind::kCpu, key);
    }
    if (!s.kernel && !s.host_kernel) {
      // Say when the op has kernels here, only not for this dtype (float16 before its kernels exist).
      bool other_dtype = KernelRegistry::instance().find(n.domain, n.op_type, s.opset, device) != nullptr;
      missing.push_back(other_dtype ? fmt::format("  {} ({} opset {}): none for {}", n.name, n.op_type, s.opset,
                                                  dtype_name(key))
                                    : fmt::format("  {} ({} opset {})", n.name, n.op_type, s.opset));
      continue;
    }
    for (const std::string& in : n.inputs) s.inputs.push_back(in.empty() ? -1 : slot_of(in));
    for (const std::string& out : n.outputs) s.outputs.push_back(out.empty() ? -1 : slot_of(out));
    plan_.steps.push_back(std::move(s));
  }
  if (!missing.empty()) {
    std::string msg = fmt::format("{} node(s) have no kernel on this device ({}):", missing.size(),
                                  device == DeviceKind::kCpu ? "cpu" : "cuda");
    for (const auto& m : missing) msg += "\n" + m;
    return unsupported("{}", msg);
  }
  for (const ValueInfo& o : g.outputs) plan_.output_slots.push_back(slot_of(o.name));

  // Last use of each slot; constants, feeds and graph outputs are never released.
  std::vector<int> last_use(plan_.slot_names.size(), -1);
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    for (int s : plan_.steps[i].inputs)
      if (s >= 0) last_use[s] = static_cast<int>(i);
    for (int s : plan_.steps[i].outputs)  // an unused output dies where it is made
      if (s >= 0 && last_use[s] < static_cast<int>(i)) last_use[s] = static_cast<int>(i);
  }
  std::vector<bool> pinned(plan_.slot_names.size(), false);
  for (int s : plan_.constant_slots) pinned[s] = true;
  for (int s : plan_.feed_slots) pinned[s] = true;
  for (int s : plan_.output_slots) pinned[s] = true;
  for (size_t s = 0; s < last_use.size(); ++s)
    if (!pinned[s] && last_use[s] >= 0) plan_.steps[last_use[s]].release.push_back(static_cast<int>(s));
  // Values are written once, so a graph output is final at the step that makes it.
  std::vector<bool> is_output(plan_.slot_names.size(), false);
  for (int s : plan_.output_slots) is_output[s] = true;
  for (PlanStep& step : plan_.steps)
    for (int s : step.outputs)
      if (s >= 0 && is_output[s]) {
        step.ready.push_back(s);
        is_output[s] = false;  // listed once even if two outputs share a name
      }
  return Status::Ok();
}

std::map<std::string, size_t> Executor::output_ready_steps() const {
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < plan_.steps.size(); ++i)
    for (int s : plan_.steps[i].ready) at[plan_.slot_names[s]] = i;
  return at;
}

Status Executor::bind_output(const std::string& name, Tensor dest) {
  auto it = plan_.slots.find(name);
  bool is_output = false;
  for (const ValueInfo& o : model_.graph.outputs) is_output = is_output || o.name == name;
  if (it == plan_.slots.end() || !is_output) return invalid_argument("'{}' is not an output of the model", name);
  if (dest.device() != device_->kind())
    return invalid_argument("output '{}' is bound to a tensor on another device", name);
  int slot = it->second;
  // Follow Identity back to the value it forwards while nothing else reads
  // that value and it is not pinned (a feed, an initializer, an output): its
  // producer then writes into the destination and the Identity aliases it.
  std::vector<int> readers(plan_.slot_names.size(), 0), producer(plan_.slot_names.size(), -1);
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    for (int s : plan_.steps[i].inputs)
      if (s >= 0) ++readers[s];
    for (int s : plan_.steps[i].outputs)
      if (s >= 0) producer[s] = static_cast<int>(i);
  }
  std::vector<bool> pinned(plan_.slot_names.size(), false);
  for (const auto* list : {&plan_.constant_slots, &plan_.feed_slots, &plan_.output_slots})
    for (int s : *list) pinned[s] = true;
  while (producer[slot] >= 0) {
    const PlanStep& step = plan_.steps[producer[slot]];
    if (step.node->op_type != "Identity" || !step.node->domain.empty() || step.inputs.size() != 1) break;
    int src = step.inputs[0];
    if (src < 0 || pinned[src] || readers[src] != 1 || producer[src] < 0 || sinks_.count(src)) break;
    slot = src;
  }
  sinks_[slot] = std::move(dest);
  return Status::Ok();
}

Status Executor::check_feeds(const std::map<std::string, Tensor>& feeds) const {
  const Graph& g = model_.graph;
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

Result<std::map<std::string, Tensor>> Executor::run(const std::map<std::string, Tensor>& feeds,
                                                    const RunOptions& options,
                                                    const std::vector<std::string>& fetch) {
  RETURN_IF_ERROR(check_feeds(feeds));
  const Graph& g = model_.graph;
  const bool on_cpu = device_->kind() == DeviceKind::kCpu;
  // slots[s] holds each value where it was made; on a GPU executor host[s] is
  // a host copy that shape rules and host-side shape arithmetic read.
  std::vector<Tensor> slots(plan_.slot_names.size());
  std::vector<Tensor> host(on_cpu ? 0 : plan_.slot_names.size());
  std::vector<OptShape> shapes(plan_.slot_names.size());
  auto bind = [&](int s, Tensor t) {
    shapes[s] = shape_from_dims(t.dims());
    if (!on_cpu && t.device() == DeviceKind::kCpu) host[s] = t;
    slots[s] = std::move(t);
  };
  if (on_cpu) {
    for (int s : plan_.constant_slots) bind(s, g.initializers.at(plan_.slot_names[s]));
  } else {
    for (int s : plan_.constant_slots) {
      bind(s, device_constants_[s]);
      host[s] = host_constants_[s];
    }
  }
  for (const auto& [name, t] : feeds) {
    int s = plan_.slots.at(name);
    if (on_cpu) {
      bind(s, t);
    } else if (t.device() == device_->kind()) {
      RETURN_IF_ERROR(device_->await(t));  // a batch staged ahead (copy stream) must have arrived
      bind(s, t);
    } else {
      ASSIGN_OR_RETURN(Tensor d, to_device(*device_, t));
      bind(s, std::move(d));
      host[s] = t;  // the caller's host tensor: rules may read it
    }
  }

  std::vector<int> fetch_slots;
  for (const std::string& f : fetch) {
    auto it = plan_.slots.find(f);
    if (it == plan_.slots.end()) return invalid_argument("cannot fetch '{}': no such value in the graph", f);
    fetch_slots.push_back(it->second);
  }
  std::vector<bool> keep(slots.size(), false);
  for (int s : fetch_slots) keep[s] = true;

  // Replay the recorded rule answers when the feeds have the recorded dtypes
  // and dims; otherwise record anew (see Executor::Replay).
  std::vector<std::pair<DType, Dims>> feed_shapes;
  for (int s : plan_.feed_slots) feed_shapes.emplace_back(slots[s].dtype(), slots[s].dims());
  const bool replaying = replay_.recorded && replay_.feed_shapes == feed_shapes;
  std::vector<bool> shape_fixed, data_fixed;  // per slot, while recording
  if (!replaying) {
    replay_ = Replay{};
    replay_.feed_shapes = std::move(feed_shapes);
    replay_.steps.resize(plan_.steps.size());
    shape_fixed.assign(slots.size(), false);
    data_fixed.assign(slots.size(), false);
    changing_.resize(slots.size(), false);
    for (int s : plan_.constant_slots) {
      shape_fixed[s] = true;
      data_fixed[s] = !changing_[s];
    }
    for (int s : plan_.feed_slots) shape_fixed[s] = true;  // the key; fed data may change
    ++recordings_;
    arena_.reset();
  }
  replayed_steps_ = 0;
  arena_outputs_ = 0;
  std::vector<std::weak_ptr<Storage>> recorded_blocks;  // per arena slot, while recording
  std::vector<size_t> live_blocks;
  if (!use_arena_) arena_.reset();
  if (replaying && use_arena_ && !replay_.arena.empty()) {
    // A block no earlier run's value still views (else a fresh one: the caller holds the old).
    if (!arena_ || arena_.use_count() > 1) {
      if (!arena_) allocator_->release_cached();  // the recording run's blocks: the arena replaces them
      arena_ = allocator_->allocate(replay_.arena_bytes);
      if (!arena_->data()) arena_.reset();  // out of memory for one block: outputs come from the allocator
    }
    handed_.assign(replay_.arena.size(), std::weak_ptr<Storage>());
  }

  auto with_node = [](const PlanStep& step, const Status& st) {
    if (st.ok()) return st;
    return st.message().find(step.node->name) == std::string::npos ? st.with_context(step.node->describe()) : st;
  };
  // The device copy of a host value, cached per slot: a tensor the rule hands
  // out every run (a Constant's value: the same storage, held here so it
  // cannot be recycled) is uploaded once; a small recomputed one (shape
  // arithmetic) again only when its bytes change.
  auto on_device = [&](int s) -> Result<Tensor> {
    const Tensor& t = slots[s];
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
  };

  auto alloc_is_device = [&](const Allocator& a) { return &a == allocator_.get(); };
  uint64_t index = 0;
  for (const PlanStep& step : plan_.steps) {
    StepRecord& record = replay_.steps[index];
    for (int s : step.inputs)
      if (s >= 0 && !slots[s].defined())
        return make_error(ErrorCode::kInternal, "{}: input '{}' has no value at run time", step.node->describe(),
                          plan_.slot_names[s]);
    auto infer = [&](InferContext& ictx) -> Status {
      RETURN_IF_ERROR(step.schema->infer(ictx));
      for (size_t i = 0; i < step.outputs.size(); ++i)
        if (step.outputs[i] >= 0 && (!ictx.output(i).shape || !shape_fully_known(*ictx.output(i).shape)))
          return make_error(ErrorCode::kInternal, "{}: the shape rule left output {} unknown at run time",
                            step.node->describe(), i);
      return Status::Ok();
    };
    auto infer_inputs = [&] {
      std::vector<InferContext::Input> in;
      for (int s : step.inputs) {
        if (s < 0) in.emplace_back();
        else in.push_back({slots[s].dtype(), &shapes[s], on_cpu ? &slots[s] : (host[s].defined() ? &host[s] : nullptr)});
      }
      return in;
    };
    const bool replay_step = replaying && record.replayable;
    std::optional<InferContext> ictx_store;  // re-made if the rule must see device values
    std::vector<int> host_fetched;
    if (replay_step) {
      ++replayed_steps_;
      for (int s : record.host_fetched)
        if (!host[s].defined()) {
          ASSIGN_OR_RETURN(host[s], to_host(*device_, slots[s]));
        }
    } else {
      ictx_store.emplace(*step.node, step.opset, infer_inputs());
      Status st = infer(*ictx_store);
      if (!st.ok() && !on_cpu) {
        // The rule needs the data of a value computed on the device (a shape
        // computed by device kernels): bring the small integer ones over and retry.
        for (int s : step.inputs)
          if (s >= 0 && !host[s].defined() && is_integer_or_bool(slots[s].dtype()) &&
              slots[s].numel() <= kMaxHostFetchElements) {
            ASSIGN_OR_RETURN(host[s], to_host(*device_, slots[s]));
            host_fetched.push_back(s);
          }
        if (!host_fetched.empty()) {
          ictx_store.emplace(*step.node, step.opset, infer_inputs());
          st = infer(*ictx_store);
        }
      }
      if (!st.ok()) return with_node(step, st);
    }
    const InferContext& ictx = replay_step ? *record.shapes : *ictx_store;
    if (!replay_step) RETURN_IF_ERROR(with_node(step, check_output_sizes(ictx, *step.node, device_->memory_budget())));

    // Where the node runs: the device, or, on a GPU executor, the host for
    // small integer results whose inputs are all host values.
    bool run_on_host = on_cpu, computed_by_rule = false;
    if (replay_step && !on_cpu) {
      computed_by_rule = record.computed_by_rule;
      run_on_host = record.run_on_host;
      if (computed_by_rule) {
        for (size_t i = 0; i < step.outputs.size(); ++i)
          if (step.outputs[i] >= 0) bind(step.outputs[i], *ictx.output(i).value);
      } else if (run_on_host) {
        for (int s : step.inputs)
          if (s >= 0 && !host[s].defined()) {
            ASSIGN_OR_RETURN(host[s], to_host(*device_, slots[s]));
          }
      }
    } else if (!on_cpu) {
      bool all_known = true;  // the rule computed every output (Shape, Size, Constant)
      int64_t out_elems = 0;
      for (size_t i = 0; i < step.outputs.size(); ++i) {
        if (step.outputs[i] < 0) continue;
        all_known = all_known && ictx.output(i).value.has_value();
        out_elems += num_elements(dims_from_shape(*ictx.output(i).shape));
      }
      bool inputs_on_host = true;
      for (int s : step.inputs) inputs_on_host = inputs_on_host && (s < 0 || host[s].defined());
      if (all_known && !step.outputs.empty()) {
        for (size_t i = 0; i < step.outputs.size(); ++i)
          if (step.outputs[i] >= 0) bind(step.outputs[i], *ictx.output(i).value);
        computed_by_rule = true;
      } else if (step.host_kernel && (!step.kernel || (inputs_on_host && out_elems <= kMaxHostOutputElements))) {
        for (int s : step.inputs)
          if (s >= 0 && !host[s].defined()) {
            ASSIGN_OR_RETURN(host[s], to_host(*device_, slots[s]));
          }
        run_on_host = true;
      }
    }
    if (!replaying) {
      // Record the answer and the placement when later runs with these feed
      // shapes may replay them; mark what this step's outputs leave fixed.
      bool replayable = true;
      const uint64_t read = ictx.values_read();
      for (size_t k = 0; k < step.inputs.size(); ++k) {
        int s = step.inputs[k];
        if (s < 0) continue;
        bool data_read = k < 64 ? ((read >> k) & 1u) != 0 : read != 0;
        replayable = replayable && shape_fixed[s] && (!data_read || data_fixed[s]);
      }
      const std::string& op = step.node->op_type;
      bool shape_only = step.node->domain.empty() && (op == "Shape" || op == "Size");
      bool random = is_random_op(*step.node);
      for (size_t i = 0; i < step.outputs.size(); ++i) {
        int o = step.outputs[i];
        if (o < 0) continue;
        bool data = replayable && !random && (shape_only || !step.inputs.empty() || ictx.output(i).value);
        for (int s : step.inputs) data = data && (shape_only || s < 0 || data_fixed[s]);
        shape_fixed[o] = replayable;
        data_fixed[o] = data;
      }
      record.replayable = replayable;
      if (replayable) {
        record.shapes = std::make_unique<InferContext>(*step.node, step.opset, std::vector<InferContext::Input>{});
        for (size_t i = 0; i < step.outputs.size(); ++i) {
          const InferContext::Output& out = ictx.output(i);
          record.shapes->set_output(i, out.dtype, out.shape);
          if (out.value) record.shapes->set_output_value(i, *out.value);
        }
        record.run_on_host = run_on_host;
        record.computed_by_rule = computed_by_rule;
        record.host_fetched = std::move(host_fetched);
      }
    }
    if (!computed_by_rule) {
      std::vector<const Tensor*> inputs;
      std::vector<Tensor> uploaded(step.inputs.size());
      for (size_t k = 0; k < step.inputs.size(); ++k) {
        int s = step.inputs[k];
        if (s < 0) {
          inputs.push_back(nullptr);
        } else if (on_cpu) {
          inputs.push_back(&slots[s]);
        } else if (run_on_host) {
          inputs.push_back(&host[s]);
        } else if (slots[s].device() == device_->kind()) {
          inputs.push_back(&slots[s]);  // not copied: a dying input stays reusable in place
        } else {
          ASSIGN_OR_RETURN(uploaded[k], on_device(s));
          inputs.push_back(&uploaded[k]);
        }
      }
      const KernelDef* kernel = run_on_host && !on_cpu ? step.host_kernel : step.kernel;
      Allocator& alloc = run_on_host && !on_cpu ? *host_allocator_ : *allocator_;
      KernelContext kctx(*step.node, step.opset, std::move(inputs), ictx, alloc, options, index);
      if (!on_cpu && !run_on_host) {
        std::vector<const Tensor*> host_inputs;
        for (int s : step.inputs) host_inputs.push_back(s >= 0 && host[s].defined() ? &host[s] : nullptr);
        kctx.set_host_inputs(std::move(host_inputs));
      }
      if (replaying && arena_ && alloc_is_device(alloc)) {
        // Outputs at their recorded arena offsets, when nothing that shares the bytes is alive.
        for (size_t a : replay_.arena_at_step[index]) {
          const ArenaSlot& slot = replay_.arena[a];
          const InferContext::Output& o = ictx.output(slot.output);
          Dims dims = dims_from_shape(*o.shape);
          size_t nbytes = static_cast<size_t>(num_elements(dims)) * dtype_size(o.dtype);
          if (kctx.outputs()[slot.output].defined() || round_to_64(nbytes) != slot.bytes) continue;
          bool free = true;
          for (size_t c : slot.conflicts) free = free && handed_[c].expired();
          if (!free) continue;
          std::shared_ptr<Storage> view = Storage::view(arena_, slot.offset, nbytes);
          handed_[a] = view;
          kctx.set_output(slot.output, Tensor(o.dtype, std::move(dims), std::move(view)));
          ++arena_outputs_;
        }
      }
      if (kernel->may_reuse_input) {
        // An input dying here whose storage nobody else holds (not a feed, an
        // initializer, a fetched value or the source of a live view).
        for (int s : step.release)
          if (!keep[s] && slots[s].storage() && slots[s].storage().use_count() == 1 &&
              slots[s].device() == (run_on_host ? DeviceKind::kCpu : device_->kind()) &&
              slots[s].dtype() == ictx.output(0).dtype && shapes[s] == ictx.output(0).shape) {
            bool is_input = false;
            for (int in : step.inputs) is_input = is_input || in == s;
            if (is_input) {
              kctx.set_reusable_input(&slots[s]);
              break;
            }
          }
      }
      if (!sinks_.empty() && (on_cpu || !run_on_host)) {
        for (size_t i = 0; i < step.outputs.size(); ++i) {
          auto sink = step.outputs[i] >= 0 ? sinks_.find(step.outputs[i]) : sinks_.end();
          if (sink != sinks_.end() && !adds_into(options, sink->second) && sink->second.dtype() == ictx.output(i).dtype &&
              sink->second.numel() == num_elements(dims_from_shape(*ictx.output(i).shape)))
            kctx.set_output(i, sink->second.reshaped(dims_from_shape(*ictx.output(i).shape)));  // written in place
        }
      }
      auto started = std::chrono::steady_clock::now();
      Status st = kernel->fn(kctx);
      // Profiling a GPU run waits for each kernel, so the time is the kernel's, not its launch's.
      if (options.op_time_ms && !on_cpu && !run_on_host && st.ok()) st = device_->synchronize();
      if (options.op_time_ms)
        (*options.op_time_ms)[step.node->op_type] +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      if (!st.ok()) return with_node(step, st);
      for (size_t i = 0; i < step.outputs.size(); ++i) {
        int s = step.outputs[i];
        if (s < 0) continue;
        Tensor& t = kctx.outputs()[i];
        if (!t.defined()) {
          if (ictx.output(i).value) t = *ictx.output(i).value;  // the rule already computed it
          else t = kctx.output(i);                                // an empty or untouched output
        }
        bind(s, std::move(t));
        // Recording: an output taken fresh from the device allocator gets an arena slot.
        const Storage* fresh = kctx.allocated_output(i);
        if (!replaying && fresh && slots[s].storage().get() == fresh && alloc_is_device(alloc)) {
          ArenaSlot slot;
          slot.step = index;
          slot.output = i;
          slot.bytes = round_to_64(slots[s].nbytes());
          replay_.arena.push_back(slot);
          recorded_blocks.push_back(slots[s].storage());
          live_blocks.push_back(replay_.arena.size() - 1);
        }
      }
    }
    // Bound outputs end in their destination: written there already, or copied or added now.
    if (!sinks_.empty()) {
      for (int s : step.outputs) {
        auto sink = s >= 0 ? sinks_.find(s) : sinks_.end();
        if (sink == sinks_.end()) continue;
        const Tensor& dest = sink->second;
        if (slots[s].dtype() != dest.dtype() || slots[s].numel() != dest.numel())
          return with_node(step, invalid_argument("output '{}' is {} {}, its bound destination {} {}",
                                                  plan_.slot_names[s], dtype_name(slots[s].dtype()),
                                                  dims_to_string(slots[s].dims()), dtype_name(dest.dtype()),
                                                  dims_to_string(dest.dims())));
        if (adds_into(options, dest)) {
          if (!math_) {
            ASSIGN_OR_RETURN(math_, vector_ops(device_->kind()));
          }
          Tensor value = slots[s].device() == device_->kind() ? slots[s] : Tensor();
          if (!value.defined()) {
            ASSIGN_OR_RETURN(value, to_device(*device_, slots[s]));
          }
          RETURN_IF_ERROR(math_->add_into(dest, value));
        } else if (slots[s].raw() != dest.raw()) {
          RETURN_IF_ERROR(device_->copy(slots[s], dest));
          ++bound_output_copies_;
        }
        bind(s, dest.reshaped(slots[s].dims()));
      }
    }
    if (options.on_output_ready)
      for (int s : step.ready) RETURN_IF_ERROR(options.on_output_ready(plan_.slot_names[s], slots[s]));
    for (int s : step.release)
      if (!keep[s]) {
        slots[s] = Tensor();
        shapes[s].reset();
        if (!on_cpu) host[s] = Tensor();
      }
    // Recording: the arena slots whose blocks are gone now end their lifetime here.
    for (size_t j = 0; j < live_blocks.size();) {
      size_t a = live_blocks[j];
      if (recorded_blocks[a].expired()) {
        replay_.arena[a].freed = index;
        live_blocks[j] = live_blocks.back();
        live_blocks.pop_back();
      } else {
        ++j;
      }
    }
    ++index;
  }
  if (!replaying) {
    for (size_t a : live_blocks) replay_.arena[a].freed = plan_.steps.size();  // outlive the run
    plan_arena(replay_, plan_.steps.size());
  }
  replay_.recorded = true;  // a failed run returns before this and records again next time
  std::map<std::string, Tensor> out;
  if (fetch.empty()) {
    for (const ValueInfo& o : g.outputs) out[o.name] = slots[plan_.slots.at(o.name)];
  } else {
    for (size_t i = 0; i < fetch.size(); ++i) out[fetch[i]] = slots[fetch_slots[i]];
  }
  return out;
}

void Executor::plan_arena(Replay& r, size_t steps) {
  // First fit in allocation order: each slot takes the lowest offset where no
  // slot alive when it is allocated (freed at its step or later) overlaps.
  for (size_t a = 0; a < r.arena.size(); ++a) {
    ArenaSlot& x = r.arena[a];
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t b = 0; b < a; ++b)
      if (r.arena[b].freed >= x.step) busy.emplace_back(r.arena[b].offset, r.arena[b].offset + r.arena[b].bytes);
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (offset + x.bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    x.offset = offset;
    r.arena_bytes = std::max(r.arena_bytes, offset + x.bytes);
    for (size_t b = 0; b < a; ++b)
      if (r.arena[b].offset < offset + x.bytes && offset < r.arena[b].offset + r.arena[b].bytes)
        x.conflicts.push_back(b);
  }
  r.arena_at_step.assign(steps, {});
  for (size_t a = 0; a < r.arena.size(); ++a) r.arena_at_step[r.arena[a].step].push_back(a);
}

Status check_plan_fits(const Model& model, const MemoryEstimate& est, const Device& device) {
  uint64_t budget = device.memory_budget();
  // First each output on its own, so a refusal names the node that asks too much.
  for (const Node& n : model.graph.nodes)
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const ValueInfo* v = n.outputs[i].empty() ? nullptr : model.graph.value(n.outputs[i]);
      if (v && v->shape) RETURN_IF_ERROR(check_output_bytes(n, i, v->dtype, *v->shape, budget));
    }
  if (budget == 0 || !est.complete) return Status::Ok();
  uint64_t need = est.initializer_bytes + est.peak_activation_bytes;
  if (need <= budget) return Status::Ok();
  return invalid_argument("the plan needs {:.1f} MiB on {} (weights {:.1f} MiB, peak activations {:.1f} MiB), more "
                          "than the memory budget of {:.1f} MiB{}",
                          need / 1048576.0, device.description(), est.initializer_bytes / 1048576.0,
                          est.peak_activation_bytes / 1048576.0, budget / 1048576.0,
                          memory_limit() ? " set by --max-memory" : " (the device's memory)");
}

MemoryEstimate estimate_memory(const Model& model, const std::set<std::string>& bound) {
  MemoryEstimate est;
  const Graph& g = model.graph;
  for (const auto& [name, t] : g.initializers) est.initializer_bytes += t.nbytes();
  // Each value's buffer: its own, or for a view op's output its input's (the root).
  std::unordered_map<std::string, std::string> root;
  auto root_of = [&](const std::string& v) -> const std::string& {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  for (const Node& n : g.nodes)
    if (is_view_op(n) && !n.inputs.empty() && !n.outputs.empty() && !n.outputs[0].empty())
      root[n.outputs[0]] = root_of(n.inputs[0]);
  std::unordered_map<std::string, size_t> last_use;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& in : g.nodes[i].inputs) last_use[root_of(in)] = i;
  // A bound output's producer writes into the caller's memory, through an
  // Identity too (Executor::bind_output), so its root is not counted either.
  std::set<std::string> held;
  for (const std::string& b : bound) held.insert(root_of(b));
  std::unordered_map<std::string, bool> is_output;  // by root: an output's buffer lives to the end
  for (const ValueInfo& o : g.outputs) is_output[root_of(o.name)] = true;
  auto bytes_of = [&](const std::string& name) -> size_t {
    const ValueInfo* v = g.value(name);
    if (!v || !v->shape || !shape_fully_known(*v->shape) || dtype_size(v->dtype) == 0) {
      est.complete = false;
      return 0;
    }
    // A shape from a file may overflow 64 bits: it counts as all the memory there is.
    auto bytes = checked_nbytes(v->dtype, dims_from_shape(*v->shape));
    return bytes && *bytes <= (uint64_t{1} << 62) ? allocator_bin_size(*bytes) : std::numeric_limits<size_t>::max() / 4;
  };
  size_t live = 0;
  std::vector<std::vector<std::string>> dies(g.nodes.size());
  for (const auto& [name, idx] : last_use)
    if (!g.is_initializer(name) && !is_output.count(name)) dies[idx].push_back(name);
  std::set<std::string> feeds;
  for (const ValueInfo* v : g.required_inputs()) {
    feeds.insert(v->name);
    live = std::min(live + bytes_of(v->name), std::numeric_limits<size_t>::max() / 2);
  }
  est.peak_activation_bytes = live;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& o : g.nodes[i].outputs)
      if (!o.empty() && !root.count(o) && !held.count(o))
        live = std::min(live + bytes_of(o), std::numeric_limits<size_t>::max() / 2);
    if (live > est.peak_activation_bytes) {
      est.peak_activation_bytes = live;
      est.peak_at = i;
    }
    for (const std::string& d : dies[i])
      if (!feeds.count(d) && !held.count(d)) live -= std::min(live, bytes_of(d));
  }
  return est;
}

}  // namespace ort_train
