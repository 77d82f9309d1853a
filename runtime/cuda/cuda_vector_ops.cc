// The training loop's vector arithmetic on the GPU, queued on the compute
// stream; the norm is reduced on the device in a fixed order and read back.
#include <cuda_runtime.h>

#include <cmath>
#include <vector>

#include "cuda_kernels/elementwise.h"
#include "cuda_kernels/vector_math.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/vector_ops.h"

namespace ort_train::cuda {
namespace {

Status check_float_pair(const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype() != DType::kFloat || b.dtype() != DType::kFloat || a.numel() != b.numel())
    return invalid_argument("{}: expected two float32 tensors of the same size", what);
  if (a.device() != DeviceKind::kCuda || b.device() != DeviceKind::kCuda)
    return invalid_argument("{}: expected tensors on the GPU", what);
  return Status::Ok();
}

class CudaVectorOps : public VectorOps {
 public:
  Status add_into(const Tensor& acc, const Tensor& x) override {
    if (dtype_is_half(x.dtype())) {
      RETURN_IF_ERROR(check_float_pair(acc, acc, "add_into"));
      if (x.numel() != acc.numel() || x.device() != DeviceKind::kCuda)
        return invalid_argument("add_into: expected a GPU tensor of {} elements", acc.numel());
      CUDA_RETURN_IF_ERROR(launch_add_into_widened(acc.data<float>(), x.raw(), x.dtype() == DType::kBFloat16,
                                                   acc.numel(), context().compute));
      return Status::Ok();
    }
    RETURN_IF_ERROR(check_float_pair(acc, x, "add_into"));
    CUDA_RETURN_IF_ERROR(launch_add_into(acc.data<float>(), x.data<float>(), acc.numel(), context().compute));
    return Status::Ok();
  }
  Status convert(const Tensor& src, const Tensor& dst) override {
    const Tensor& wide = src.dtype() == DType::kFloat ? src : dst;
    const Tensor& narrow = src.dtype() == DType::kFloat ? dst : src;
    RETURN_IF_ERROR(check_float_pair(wide, wide, "convert"));
    if (!dtype_is_half(narrow.dtype()) || narrow.numel() != wide.numel() || narrow.device() != DeviceKind::kCuda)
      return invalid_argument("convert: expected float32 and float16/bfloat16 GPU tensors of the same size");
    CUDA_RETURN_IF_ERROR(launch_cast(*stored_elem_type(src.dtype()), *stored_elem_type(dst.dtype()), src.raw(),
                                     dst.raw(), src.numel(), context().compute));
    return Status::Ok();
  }
  Result<double> global_norm(const std::vector<Tensor>& ts) override {
    cudaStream_t stream = context().compute;
    std::vector<const float*> ptrs;
    std::vector<int64_t> sizes;
    for (const Tensor& t : ts) {
      RETURN_IF_ERROR(check_float_pair(t, t, "global_norm"));
      ptrs.push_back(t.data<float>());
      sizes.push_back(t.numel());
    }
    int64_t n = static_cast<int64_t>(ts.size());
    auto table = scratch(n * (sizeof(float*) + sizeof(int64_t)) + (sum_squares_partials(n) + 1) * sizeof(double));
    auto* base = static_cast<char*>(table->data());
    auto* d_ptrs = reinterpret_cast<const float**>(base);
    auto* d_sizes = reinterpret_cast<int64_t*>(base + n * sizeof(float*));
    auto* d_out = reinterpret_cast<double*>(base + n * (sizeof(float*) + sizeof(int64_t)));
    double* d_partials = d_out + 1;
    RETURN_IF_ERROR(upload(d_ptrs, ptrs.data(), n * sizeof(float*)));
    RETURN_IF_ERROR(upload(d_sizes, sizes.data(), n * sizeof(int64_t)));
    CUDA_RETURN_IF_ERROR(launch_sum_squares(d_ptrs, d_sizes, n, d_partials, d_out, stream));
    double sq = 0;
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&sq, d_out, sizeof(double), cudaMemcpyDeviceToHost, stream));
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    return std::sqrt(sq);
  }
};

const VectorOpsRegistrar kRegistrar(DeviceKind::kCuda, [] {
  static CudaVectorOps ops;
  return static_cast<VectorOps*>(&ops);
});

}  // namespace
}  // namespace ort_train::cuda
