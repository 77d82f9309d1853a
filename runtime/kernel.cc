#include "runtime/kernel.h"

#include <algorithm>
#include <new>

namespace ort_train {

Tensor& KernelContext::output(size_t i) {
  Tensor& t = outputs_[i];
  if (!t.defined()) {
    const auto& o = shapes_.output(i);
    Dims dims = dims_from_shape(*o.shape);
    if (i == 0 && reusable_ && reusable_->dtype() == o.dtype && reusable_->dims() == dims) {
      t = Tensor(o.dtype, std::move(dims), reusable_->storage());
    } else {
      t = allocate(o.dtype, std::move(dims));
      if (allocated_.size() <= i) allocated_.resize(i + 1, nullptr);
      allocated_[i] = t.storage().get();
    }
  }
  return t;
}

void KernelContext::alias_output(size_t i, const Tensor& source) {
  const auto& o = shapes_.output(i);
  outputs_[i] = Tensor(o.dtype, dims_from_shape(*o.shape), source.storage());
}

Tensor KernelContext::allocate(DType dtype, Dims dims) {
  size_t bytes = static_cast<size_t>(num_elements(dims)) * dtype_size(dtype);
  std::shared_ptr<Storage> storage = allocator_.allocate(bytes);
  // A host allocator out of memory hands back storage without memory, which
  // a CPU kernel would write through; the executor names the node
  // (Executor::run_kernel). CUDA kernels check their outputs themselves.
  if (!storage->data() && bytes > 0 && storage->device() == DeviceKind::kCpu) throw std::bad_alloc();
  return Tensor(dtype, std::move(dims), std::move(storage));
}

uint64_t KernelContext::random_seed() const {
  // splitmix64 over (seed, step, node) so every node and step gets its own stream.
  uint64_t z = options_.seed ^ (options_.step * 0x9E3779B97F4A7C15ull) ^ (node_index_ * 0xBF58476D1CE4E5B9ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

KernelRegistry& KernelRegistry::instance() {
  static KernelRegistry r;
  return r;
}

void KernelRegistry::add(KernelDef def) {
  if (def.domain == "ai.onnx") def.domain.clear();
  defs_.push_back(std::make_unique<KernelDef>(std::move(def)));
}

const KernelDef* KernelRegistry::find(const std::string& domain, const std::string& op_type, int64_t opset,
                                      DeviceKind device, DType key) const {
  const std::string& d = domain == "ai.onnx" ? std::string() : domain;
  for (const auto& k : defs_)
    if (k->domain == d && k->op_type == op_type && k->device == device && opset >= k->min_opset &&
        opset <= k->max_opset && k->accepts(key))
      return k.get();
  return nullptr;
}

bool KernelDef::accepts(DType key) const {
  if (key == DType::kUndefined) return true;
  if (dtypes.empty()) return dtype_size(key) > 0 && !dtype_is_half(key);
  return std::find(dtypes.begin(), dtypes.end(), key) != dtypes.end();
}

const std::vector<DType>& all_stored_dtypes() {
  static const std::vector<DType> all{DType::kFloat,  DType::kDouble, DType::kFloat16, DType::kBFloat16,
                                      DType::kInt8,   DType::kInt16,  DType::kInt32,   DType::kInt64,
                                      DType::kUInt8,  DType::kUInt16, DType::kUInt32,  DType::kUInt64,
                                      DType::kBool};
  return all;
}

DType kernel_key_dtype(const std::vector<DType>& inputs, DType output0) {
  DType first = DType::kUndefined;
  for (DType t : inputs) {
    if (dtype_is_float(t)) return t;
    if (first == DType::kUndefined) first = t;
  }
  return first != DType::kUndefined ? first : output0;
}

DType kernel_key_dtype(const Graph& g, const Node& n) {
  auto dtype_of_value = [&](const std::string& name) {
    if (name.empty()) return DType::kUndefined;
    if (g.is_initializer(name)) return g.initializers.at(name).dtype();
    const ValueInfo* v = g.value(name);
    return v ? v->dtype : DType::kUndefined;
  };
  std::vector<DType> inputs;
  for (const std::string& in : n.inputs) inputs.push_back(dtype_of_value(in));
  return kernel_key_dtype(inputs, n.outputs.empty() ? DType::kUndefined : dtype_of_value(n.outputs[0]));
}

Status unsupported_dtype(const KernelContext& ctx, DType t) {
  return unsupported("{}: input dtype {} is not supported by the CPU kernel", ctx.node().describe(),
                     dtype_name(t));
}

}  // namespace ort_train
