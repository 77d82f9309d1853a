#include "runtime/cuda/cuda_kernel.h"

namespace ort_train::cuda {

Result<Tensor*> output(KernelContext& ctx, size_t i) {
  Tensor& t = ctx.output(i);
  if (t.numel() > 0 && !t.raw())
    return make_error(ErrorCode::kInternal, "{}: out of GPU memory allocating output {} ({} bytes)",
                      ctx.node().describe(), i, t.nbytes());
  return &t;
}

Result<Tensor> temp(KernelContext& ctx, DType dtype, Dims dims) {
  Tensor t = ctx.allocate(dtype, std::move(dims));
  if (t.numel() > 0 && !t.raw())
    return make_error(ErrorCode::kInternal, "{}: out of GPU memory for scratch space ({} bytes)",
                      ctx.node().describe(), t.nbytes());
  return t;
}

IndexFaultSite index_fault_site(const KernelContext& ctx) {
  return context().index_faults->site(ctx.node().describe());
}

Status unsupported_cuda_dtype(const KernelContext& ctx, DType t) {
  return unsupported("{}: input dtype {} is not supported by the CUDA kernel", ctx.node().describe(), dtype_name(t));
}

}  // namespace ort_train::cuda

namespace ort_train::cuda {

Result<Tensor> host_input(KernelContext& ctx, size_t i) {
  if (const Tensor* h = ctx.host_input(i)) return *h;
  return host_copy(ctx.input(i));
}

Result<Tensor> host_copy(const Tensor& t) {
  Tensor h = Tensor::host(t.dtype(), t.dims());
  if (t.nbytes()) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(h.raw(), t.raw(), t.nbytes(), cudaMemcpyDeviceToHost, stream()));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream()));
  }
  return h;
}

}  // namespace ort_train::cuda
