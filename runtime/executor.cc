#include "runtime/executor.h"

#include <fmt/format.h>

#include <chrono>
#include <unordered_map>

#include "graph/op_schema.h"
#include "graph/shape_inference.h"

namespace ort_train {

Status check_tensor_io(const Graph& g) {
  for (const auto* list : {&g.inputs, &g.outputs})
    for (const ValueInfo& v : *list)
      if (!v.non_tensor_type.empty())
        return unsupported("graph {} '{}' has a non-tensor type (sequence, optional or map), which is not supported",
                           list == &g.inputs ? "input" : "output", v.name);
  return Status::Ok();
}

Result<std::unique_ptr<Executor>> Executor::create(const Model& model, DeviceKind device) {
  if (device != DeviceKind::kCpu) return unsupported("only the CPU device is available in this build");
  std::unique_ptr<Executor> ex(new Executor(model, make_cpu_caching_allocator()));
  RETURN_IF_ERROR(ex->build_plan(device));
  return ex;
}

Status Executor::build_plan(DeviceKind device) {
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
    s.kernel = KernelRegistry::instance().find(n.domain, n.op_type, s.opset, device);
    if (!s.kernel) {
      missing.push_back(fmt::format("  {} ({} opset {})", n.name, n.op_type, s.opset));
      continue;
    }
    for (const std::string& in : n.inputs) s.inputs.push_back(in.empty() ? -1 : slot_of(in));
    for (const std::string& out : n.outputs) s.outputs.push_back(out.empty() ? -1 : slot_of(out));
    plan_.steps.push_back(std::move(s));
  }
  if (!missing.empty()) {
    std::string msg = fmt::format("{} node(s) have no kernel on this device:", missing.size());
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
  std::vector<Tensor> slots(plan_.slot_names.size());
  std::vector<OptShape> shapes(plan_.slot_names.size());
  auto bind = [&](int s, Tensor t) {
    shapes[s] = shape_from_dims(t.dims());
    slots[s] = std::move(t);
  };
  for (int s : plan_.constant_slots) bind(s, g.initializers.at(plan_.slot_names[s]));
  for (const auto& [name, t] : feeds) bind(plan_.slots.at(name), t);

  std::vector<int> fetch_slots;
  for (const std::string& f : fetch) {
    auto it = plan_.slots.find(f);
    if (it == plan_.slots.end()) return invalid_argument("cannot fetch '{}': no such value in the graph", f);
    fetch_slots.push_back(it->second);
  }
  std::vector<bool> keep(slots.size(), false);
  for (int s : fetch_slots) keep[s] = true;

  uint64_t index = 0;
  for (const PlanStep& step : plan_.steps) {
    std::vector<InferContext::Input> infer_inputs;
    std::vector<const Tensor*> inputs;
    for (int s : step.inputs) {
      if (s < 0) {
        infer_inputs.emplace_back();
        inputs.push_back(nullptr);
        continue;
      }
      if (!slots[s].defined())
        return make_error(ErrorCode::kInternal, "{}: input '{}' has no value at run time", step.node->describe(),
                          plan_.slot_names[s]);
      infer_inputs.push_back({slots[s].dtype(), &shapes[s], &slots[s]});
      inputs.push_back(&slots[s]);
    }
    InferContext ictx(*step.node, step.opset, std::move(infer_inputs));
    Status st = step.schema->infer(ictx);
    if (!st.ok()) return st.message().find(step.node->name) == std::string::npos ? st.with_context(step.node->describe()) : st;
    for (size_t i = 0; i < step.outputs.size(); ++i)
      if (step.outputs[i] >= 0 && (!ictx.output(i).shape || !shape_fully_known(*ictx.output(i).shape)))
        return make_error(ErrorCode::kInternal, "{}: the shape rule left output {} unknown at run time",
                          step.node->describe(), i);
    KernelContext kctx(*step.node, step.opset, std::move(inputs), ictx, *allocator_, options, index++);
    if (step.kernel->may_reuse_input) {
      // An input dying here whose storage nobody else holds (not a feed, an
      // initializer, a fetched value or the source of a live view).
      for (int s : step.release)
        if (!keep[s] && slots[s].storage() && slots[s].storage().use_count() == 1 &&
            slots[s].dtype() == ictx.output(0).dtype && shapes[s] == ictx.output(0).shape) {
          bool is_input = false;
          for (int in : step.inputs) is_input = is_input || in == s;
          if (is_input) {
            kctx.set_reusable_input(&slots[s]);
            break;
          }
        }
    }
    auto started = std::chrono::steady_clock::now();
    st = step.kernel->fn(kctx);
    if (options.op_time_ms)
      (*options.op_time_ms)[step.node->op_type] +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    if (!st.ok()) return st.message().find(step.node->name) == std::string::npos ? st.with_context(step.node->describe()) : st;
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      int s = step.outputs[i];
      if (s < 0) continue;
      Tensor& t = kctx.outputs()[i];
      if (!t.defined()) {
        if (ictx.output(i).value) t = *ictx.output(i).value;  // the rule already computed it
        else t = kctx.output(i);                                // an empty or untouched output
      }
      bind(s, std::move(t));
    }
    for (int s : step.release)
      if (!keep[s]) {
        slots[s] = Tensor();
        shapes[s].reset();
      }
  }
  std::map<std::string, Tensor> out;
  if (fetch.empty()) {
    for (const ValueInfo& o : g.outputs) out[o.name] = slots[plan_.slots.at(o.name)];
  } else {
    for (size_t i = 0; i < fetch.size(); ++i) out[fetch[i]] = slots[fetch_slots[i]];
  }
  return out;
}

MemoryEstimate estimate_memory(const Model& model) {
  MemoryEstimate est;
  const Graph& g = model.graph;
  for (const auto& [name, t] : g.initializers) est.initializer_bytes += t.nbytes();
  std::unordered_map<std::string, size_t> last_use;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const std::string& in : g.nodes[i].inputs) last_use[in] = i;
  std::unordered_map<std::string, bool> is_output;
  for (const ValueInfo& o : g.outputs) is_output[o.name] = true;
  auto bytes_of = [&](const std::string& name) -> size_t {
    const ValueInfo* v = g.value(name);
    if (!v || !v->shape || !shape_fully_known(*v->shape) || dtype_size(v->dtype) == 0) {
      est.complete = false;
      return 0;
    }
    return allocator_bin_size(static_cast<size_t>(num_elements(dims_from_shape(*v->shape))) * dtype_size(v->dtype));
  };
  size_t live = 0;
  std::vector<std::vector<std::string>> dies(g.nodes.size());
  for (const auto& [name, idx] : last_use)
    if (!g.is_initializer(name) && !is_output.count(name)) dies[idx].push_back(name);
  for (const ValueInfo* v : g.required_inputs()) live += bytes_of(v->name);
  est.peak_activation_bytes = live;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (const std::string& o : g.nodes[i].outputs)
      if (!o.empty()) live += bytes_of(o);
    est.peak_activation_bytes = std::max(est.peak_activation_bytes, live);
    for (const std::string& d : dies[i]) {
      bool is_feed = false;
      for (const ValueInfo* v : g.required_inputs()) is_feed = is_feed || v->name == d;
      if (!is_feed) live -= std::min(live, bytes_of(d));
    }
  }
  return est;
}

}  // namespace ort_train
