// What a CUDA kernel registration needs: the registration macro, the compute
// stream, and output allocation that turns an exhausted GPU into an error.
// A family's registrations live in runtime/cuda/kernels/<family>.cc and call
// the launchers of cuda_kernels/<family>.cu.
#pragma once
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/kernel.h"

#define ORT_REGISTER_CUDA_KERNEL(op, min_opset, max_opset, fn) \
  ORT_REGISTER_KERNEL("", op, min_opset, max_opset, ::ort_train::DeviceKind::kCuda, fn)
#define ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(domain, op, min_opset, max_opset, fn) \
  ORT_REGISTER_KERNEL(domain, op, min_opset, max_opset, ::ort_train::DeviceKind::kCuda, fn)
// For kernels that may write output 0 over a dying input (KernelDef::may_reuse_input).
#define ORT_REGISTER_CUDA_KERNEL_INPLACE(op, min_opset, max_opset, fn)                                 \
  static ::ort_train::KernelRegistrar ORT_CONCAT(_kernel_registrar_, __LINE__)(::ort_train::KernelDef{ \
      "", op, min_opset, max_opset, ::ort_train::DeviceKind::kCuda, fn, true}, __FILE__)

namespace ort_train::cuda {

inline cudaStream_t stream() { return context().compute; }

// Output i with device memory, or an out-of-memory error naming the node.
Result<Tensor*> output(KernelContext& ctx, size_t i);
// A device scratch tensor, or an out-of-memory error naming the node.
Result<Tensor> temp(KernelContext& ctx, DType dtype, Dims dims);
// The error for an input dtype a CUDA kernel does not handle.
Status unsupported_cuda_dtype(const KernelContext& ctx, DType t);
// Where the kernel records an index it skips for lying outside what it
// indexes; the device reports it, naming this node, after its next wait.
IndexFaultSite index_fault_site(const KernelContext& ctx);
// Input i on the host: the executor's host copy when it has one, else copied
// from the device (which waits for the stream: avoid in the steady state).
Result<Tensor> host_input(KernelContext& ctx, size_t i);
// A host copy of a device tensor, after the compute stream's queued work (a
// measured kernel choice compares its candidates' outputs so).
Result<Tensor> host_copy(const Tensor& t);

}  // namespace ort_train::cuda

// Binds `var` (a Tensor&) to output i or returns the out-of-memory error.
#define CUDA_OUTPUT(var, ctx, i)                                  \
  ASSIGN_OR_RETURN(::ort_train::Tensor* ORT_CONCAT(var, _ptr), ::ort_train::cuda::output(ctx, i)); \
  ::ort_train::Tensor& var = *ORT_CONCAT(var, _ptr)
