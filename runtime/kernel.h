// The kernel interface: a kernel gets its node, its input tensors and lazily
// allocated outputs whose dtype/shape the op's shape rule already decided.
// Kernels register in their own file with ORT_REGISTER_KERNEL, keyed by
// (domain, op, opset range, device, dtypes); no central list. The dtype a
// node is matched on is its key dtype (kernel_key_dtype): an fp16 kernel is
// one more registration beside the float one, not a change to it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/op_schema.h"
#include "runtime/allocator.h"

namespace ort_train {

class Device;

// Per-run settings every kernel may read.
struct RunOptions {
  bool training = false;  // Dropout/BatchNormalization behave as in training when the graph says so
  uint64_t seed = 0;      // base seed for random kernels
  uint64_t step = 0;      // advances random streams between runs
  // When set, the executor adds each node's wall time (ms) under its op type,
  // and (op_shape_time_ms) under its op type and input shapes ("Conv
  // [32,64,8,8] [64,64,3,3]"): the costly nodes of a model, not just the ops.
  std::map<std::string, double>* op_time_ms = nullptr;
  std::map<std::string, double>* op_shape_time_ms = nullptr;
  // Called for each graph output right after the node that makes it final
  // (before the next node runs), with its value: the seam a communicator
  // hooks to start reducing a gradient while the backward pass goes on. On a
  // GPU the value's work is queued, not finished, when this is called. An
  // error stops the run.
  std::function<Status(const std::string& name, const Tensor& value)> on_output_ready;
  // Outputs bound to a destination (Executor::bind_output): false writes the
  // value there, true adds it to what is there (micro-batch accumulation),
  // except into float16/bfloat16 destinations, which are always written (the
  // caller sums those in float32).
  bool accumulate_bound_outputs = false;
  // The caller takes each graph output at on_output_ready: outputs it did not
  // fetch are freed after their last use instead of living until the run
  // ends (ZeRO-2's gradients: only the one being sharded is alive at a time).
  bool release_outputs = false;
};

class KernelContext {
 public:
  KernelContext(const Node& node, int64_t opset, std::vector<const Tensor*> inputs, const InferContext& shapes,
                Allocator& allocator, const RunOptions& options, uint64_t node_index)
      : node_(node), opset_(opset), inputs_(std::move(inputs)), shapes_(shapes), allocator_(allocator),
        options_(options), node_index_(node_index), outputs_(node.outputs.size()) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor& input(size_t i) const { return *inputs_[i]; }
  // A host copy of input i, for the small integer inputs a kernel reads on the
  // host (axes, pads, repeats): the input itself on the CPU; on a GPU the
  // executor's host copy of an initializer, constant or shape-arithmetic result,
  // or null when the value exists only on the device.
  const Tensor* host_input(size_t i) const {
    if (i < host_inputs_.size()) return host_inputs_[i];
    return has_input(i) && inputs_[i]->device() == DeviceKind::kCpu ? inputs_[i] : nullptr;
  }
  void set_host_inputs(std::vector<const Tensor*> h) { host_inputs_ = std::move(h); }
  // The device this call runs on (the executor's, or the host's for a node a
  // GPU executor runs there); null where no executor runs the kernel
  // (constant folding, which is on the host). For kernels that run subgraphs
  // (If, Loop, Scan) on the caller's own device, settings and GPU index.
  const std::shared_ptr<Device>& device() const { return device_; }
  void set_device(std::shared_ptr<Device> d) { device_ = std::move(d); }
  size_t num_outputs() const { return outputs_.size(); }
  bool has_output(size_t i) const { return i < node_.outputs.size() && !node_.outputs[i].empty(); }
  // The output allocated with the shape the rule inferred (allocated on first call;
  // not thread-safe: take it before a parallel region, never inside one).
  Tensor& output(size_t i);
  // Makes output i share input storage (Reshape, Identity, ...) with the inferred dims.
  void alias_output(size_t i, const Tensor& source);
  // Sets output i to a given tensor (the rule computed its value already, or a kernel-built result).
  void set_output(size_t i, Tensor t) { outputs_[i] = std::move(t); }
  Tensor allocate(DType dtype, Dims dims);
  const RunOptions& options() const { return options_; }
  // A seed unique to this node and run, for reproducible random kernels.
  uint64_t random_seed() const;
  std::vector<Tensor>& outputs() { return outputs_; }
  const std::vector<Tensor>& outputs() const { return outputs_; }
  const InferContext& shapes() const { return shapes_; }
  // A context over the same node and inputs whose outputs are all still to be
  // allocated: runs a kernel without touching this one's outputs (a measured
  // kernel choice times its candidates so, runtime/kernel_choice.h).
  KernelContext with_fresh_outputs() const {
    KernelContext c(node_, opset_, inputs_, shapes_, allocator_, options_, node_index_);
    c.host_inputs_ = host_inputs_;
    c.device_ = device_;
    return c;
  }
  // A context over the same node, run and outputs-to-come with other input
  // tensors (of the same dims): the 16-bit CPU twins run the float32 kernel
  // on widened copies through it (runtime/cpu/kernels/half_twins.cc).
  KernelContext with_inputs(std::vector<const Tensor*> inputs) const {
    KernelContext c(node_, opset_, std::move(inputs), shapes_, allocator_, options_, node_index_);
    c.device_ = device_;
    return c;
  }
  // An input whose storage output 0 may take over (set by the executor).
  void set_reusable_input(const Tensor* t) { reusable_ = t; }
  // The storage output(i) took fresh from the allocator, or null (preset,
  // aliased, set by the kernel, or an input's storage taken over): what the
  // executor's replay arena may place next time.
  const Storage* allocated_output(size_t i) const { return i < allocated_.size() ? allocated_[i] : nullptr; }

 private:
  const Node& node_;
  int64_t opset_;
  std::vector<const Tensor*> inputs_;
  std::vector<const Tensor*> host_inputs_;
  std::shared_ptr<Device> device_;
  const InferContext& shapes_;
  Allocator& allocator_;
  const RunOptions& options_;
  uint64_t node_index_;
  std::vector<Tensor> outputs_;
  const Tensor* reusable_ = nullptr;
  std::vector<const Storage*> allocated_;
};

using KernelFn = std::function<Status(KernelContext&)>;

struct KernelDef {
  std::string domain;
  std::string op_type;
  int64_t min_opset = 1;
  int64_t max_opset = 1000;
  DeviceKind device = DeviceKind::kCpu;
  KernelFn fn;
  // The kernel reads input element i before writing output element i (and
  // nothing after it), so output 0 may take over the storage of an input of
  // the same dtype and dims that dies at this node. Saves a buffer and keeps
  // the data in cache.
  bool may_reuse_input = false;
  // The key dtypes this kernel computes in; empty means the default set:
  // float32, float64, the integers and bool (what dispatch_all covers). The
  // 16-bit floats are never in the default set, so a float16 node finds no
  // kernel, at plan time and by name, unless one registered for it.
  std::vector<DType> dtypes;
  std::string source;  // the file that registered it (__FILE__): docs/op_files.md
  bool accepts(DType key) const;
};

// The dtype a node is matched on: that of its first floating-point input
// (the one its arithmetic runs in: Where's x, Gather's data, Equal's
// operands), else its first input's, else output 0's; kUndefined when the
// graph does not say.
DType kernel_key_dtype(const Graph& g, const Node& n);
// The same rule over the inputs' dtypes (kUndefined for an omitted one) and output 0's.
DType kernel_key_dtype(const std::vector<DType>& inputs, DType output0);

// Every dtype a kernel may store (for view and shape ops that never read the data).
const std::vector<DType>& all_stored_dtypes();

class KernelRegistry {
 public:
  static KernelRegistry& instance();
  void add(KernelDef def);
  // The kernel for the op on the device that accepts `key` (kUndefined: any).
  const KernelDef* find(const std::string& domain, const std::string& op_type, int64_t opset, DeviceKind device,
                        DType key = DType::kUndefined) const;
  const std::vector<std::unique_ptr<KernelDef>>& all() const { return defs_; }

 private:
  std::vector<std::unique_ptr<KernelDef>> defs_;
};

struct KernelRegistrar {
  KernelRegistrar(KernelDef d, const char* file) {
    d.source = file;
    KernelRegistry::instance().add(std::move(d));
  }
};

// The error a kernel returns for an input dtype it does not handle.
Status unsupported_dtype(const KernelContext& ctx, DType t);

// A reader of a kernel's integer inputs on the host (host_input): input i's
// values, nullopt when it is omitted, an error when its value is on the device
// only. What resolve_node_slice (graph/ops/slice.h) and the like take.
inline auto host_ints(const KernelContext& ctx) {
  return [&ctx](size_t i) -> Result<std::optional<std::vector<int64_t>>> {
    if (!ctx.has_input(i)) return std::optional<std::vector<int64_t>>();
    const Tensor* t = ctx.host_input(i);
    if (!t) return invalid_argument("{}: input {} has no host copy", ctx.node().describe(), i);
    return std::optional<std::vector<int64_t>>(t->to_int64_vector());
  };
}

}  // namespace ort_train

#define ORT_REGISTER_KERNEL(domain, op, min_opset, max_opset, device, fn)                                \
  static ::ort_train::KernelRegistrar ORT_CONCAT(_kernel_registrar_, __LINE__)(::ort_train::KernelDef{ \
      domain, op, min_opset, max_opset, device, fn}, __FILE__)
#define ORT_REGISTER_CPU_KERNEL(op, min_opset, max_opset, fn) \
  ORT_REGISTER_KERNEL("", op, min_opset, max_opset, ::ort_train::DeviceKind::kCpu, fn)
// A kernel for an explicit list of key dtypes (KernelDef::dtypes).
#define ORT_REGISTER_KERNEL_FOR_DTYPES(domain, op, min_opset, max_opset, device, fn, dtypes)            \
  static ::ort_train::KernelRegistrar ORT_CONCAT(_kernel_registrar_, __LINE__)(::ort_train::KernelDef{ \
      domain, op, min_opset, max_opset, device, fn, false, dtypes}, __FILE__)
// For kernels that may write output 0 over a dying input (see KernelDef::may_reuse_input).
#define ORT_REGISTER_KERNEL_INPLACE(domain, op, min_opset, max_opset, device, fn)                         \
  static ::ort_train::KernelRegistrar ORT_CONCAT(_kernel_registrar_, __LINE__)(::ort_train::KernelDef{ \
      domain, op, min_opset, max_opset, device, fn, true}, __FILE__)
#define ORT_REGISTER_CPU_KERNEL_INPLACE(op, min_opset, max_opset, fn)                                    \
  static ::ort_train::KernelRegistrar ORT_CONCAT(_kernel_registrar_, __LINE__)(::ort_train::KernelDef{ \
      "", op, min_opset, max_opset, ::ort_train::DeviceKind::kCpu, fn, true}, __FILE__)
