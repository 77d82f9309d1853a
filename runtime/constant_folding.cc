// Registers the CPU kernels as shape inference's constant evaluator: a node
// whose inputs are all known (initializers, Constants, folded Shapes) and whose
// outputs are small is run once at load time, so the shape arithmetic that
// exporters emit resolves to concrete shapes and memory can be planned.
// A kernel error here is not fatal: the value just stays unknown until run time.
#include <new>

#include "graph/shape_inference.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

std::optional<std::vector<Tensor>> evaluate_on_cpu(const Node& node, int64_t opset,
                                                   const std::vector<const Tensor*>& inputs, InferContext& shapes) {
  std::vector<DType> dtypes;  // the kernel key as the executor picks it
  for (const Tensor* t : inputs) dtypes.push_back(t ? t->dtype() : DType::kUndefined);
  DType key = kernel_key_dtype(dtypes, shapes.num_outputs() > 0 ? shapes.output(0).dtype : DType::kUndefined);
  const KernelDef* k = KernelRegistry::instance().find(node.domain, node.op_type, opset, DeviceKind::kCpu, key);
  if (!k) return std::nullopt;
  for (const Tensor* t : inputs)
    if (t && t->device() != DeviceKind::kCpu) return std::nullopt;
  static std::shared_ptr<Allocator> allocator = make_cpu_caching_allocator();
  RunOptions options;
  KernelContext ctx(node, opset, inputs, shapes, *allocator, options, 0);
  try {
    if (!k->fn(ctx).ok()) return std::nullopt;
  } catch (const std::bad_alloc&) {
    return std::nullopt;  // left to run time, where the executor names the node
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    Tensor& t = ctx.outputs()[i];
    if (!t.defined() && shapes.output(i).value) t = *shapes.output(i).value;
    out.push_back(t.defined() ? t.clone() : Tensor());  // own storage, detached from the scratch allocator
  }
  return out;
}

const bool kRegistered = [] {
  register_constant_evaluator(evaluate_on_cpu);
  return true;
}();

}  // namespace
}  // namespace ort_train
