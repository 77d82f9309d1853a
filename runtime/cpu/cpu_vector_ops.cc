// The training loop's vector arithmetic on the host, on the OpenMP pool.
#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>

#include "numerics/cast_value.h"
#include "runtime/cpu/half_convert.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/simd_clones.h"
#include "runtime/vector_ops.h"

namespace ort_train {
namespace {

// Sum of squares in double over eight interleaved accumulators added in a
// fixed order at the end: independent chains the compiler vectorizes (one
// serial sum was a dependent add per element), and the same result wherever
// the chunk runs (and in each clone: simd_clones.h).
ORT_TRAIN_SIMD_CLONES double sum_of_squares(const float* p, int64_t n) {
  double acc[8] = {};
  int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) acc[l] += static_cast<double>(p[k + l]) * p[k + l];
  for (; k < n; ++k) acc[k % 8] += static_cast<double>(p[k]) * p[k];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

Status check_float_pair(const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype() != DType::kFloat || b.dtype() != DType::kFloat || a.numel() != b.numel())
    return invalid_argument("{}: expected two float32 tensors of the same size, got {} {} and {} {}", what,
                            dtype_name(a.dtype()), dims_to_string(a.dims()), dtype_name(b.dtype()),
                            dims_to_string(b.dims()));
  if (a.device() != DeviceKind::kCpu || b.device() != DeviceKind::kCpu)
    return invalid_argument("{}: expected host tensors", what);
  return Status::Ok();
}

// A float32 accumulator and a float32 or 16-bit float source of the same size, on the host.
Status check_widening_pair(const Tensor& acc, const Tensor& x, const char* what) {
  if (acc.dtype() != DType::kFloat || !(x.dtype() == DType::kFloat || dtype_is_half(x.dtype())) ||
      acc.numel() != x.numel())
    return invalid_argument("{}: expected float32 and float32/float16/bfloat16 tensors of the same size, got {} {} and {} {}",
                            what, dtype_name(acc.dtype()), dims_to_string(acc.dims()), dtype_name(x.dtype()),
                            dims_to_string(x.dims()));
  if (acc.device() != DeviceKind::kCpu || x.device() != DeviceKind::kCpu)
    return invalid_argument("{}: expected host tensors", what);
  return Status::Ok();
}

template <typename T>
void add_widened(float* a, const T* b, int64_t n) {
  parallel_for(n, 1 << 14, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) a[k] += static_cast<float>(b[k]);
  });
}

template <typename From, typename To>
void convert_loop(const From* src, To* dst, int64_t n) {
  parallel_for(n, 1 << 14, [&](int64_t lo, int64_t hi) {
    for (int64_t k = lo; k < hi; ++k) dst[k] = cast_value<From, To>(src[k]);
  });
}

class CpuVectorOps : public VectorOps {
 public:
  Status add_into(const Tensor& acc, const Tensor& x) override {
    RETURN_IF_ERROR(check_widening_pair(acc, x, "add_into"));
    float* a = acc.data<float>();
    switch (x.dtype()) {
      case DType::kFloat16: add_widened(a, x.data<Float16>(), acc.numel()); break;
      case DType::kBFloat16: add_widened(a, x.data<BFloat16>(), acc.numel()); break;
      default: add_widened(a, x.data<float>(), acc.numel()); break;
    }
    return Status::Ok();
  }
  Status convert(const Tensor& src, const Tensor& dst) override {
    bool to_half = src.dtype() == DType::kFloat;
    const Tensor& wide = to_half ? src : dst;
    const Tensor& narrow = to_half ? dst : src;
    RETURN_IF_ERROR(check_widening_pair(wide, narrow, "convert"));
    if (!dtype_is_half(narrow.dtype())) return invalid_argument("convert: one side must be float16 or bfloat16");
    int64_t n = src.numel();
    if (to_half && dst.dtype() == DType::kFloat16) convert_loop(src.data<float>(), dst.data<Float16>(), n);
    else if (to_half) parallel_float_to_bfloat16(src.data<float>(), dst.data<BFloat16>(), n);
    else if (src.dtype() == DType::kFloat16) convert_loop(src.data<Float16>(), dst.data<float>(), n);
    else parallel_bfloat16_to_float(src.data<BFloat16>(), dst.data<float>(), n);
    return Status::Ok();
  }
  Result<double> global_norm(const std::vector<Tensor>& ts) override {
    ASSIGN_OR_RETURN(std::vector<double> partial, norm_partials(ts));
    double sq = 0;
    for (double v : partial) sq += v;
    return std::sqrt(sq);
  }
  // Partial sums per fixed chunk: the same result for any thread count.
  Result<std::vector<double>> norm_partials(const std::vector<Tensor>& ts) override {
    std::vector<std::array<int64_t, 2>> chunks;  // (tensor, begin)
    for (size_t i = 0; i < ts.size(); ++i) {
      RETURN_IF_ERROR(check_float_pair(ts[i], ts[i], "global_norm"));
      for (int64_t b = 0; b < ts[i].numel(); b += kNormChunk) chunks.push_back({static_cast<int64_t>(i), b});
    }
    std::vector<double> partial(chunks.size(), 0.0);
    parallel_for(static_cast<int64_t>(chunks.size()), 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const Tensor& g = ts[static_cast<size_t>(chunks[c][0])];
        const float* p = g.data<float>();
        partial[static_cast<size_t>(c)] =
            sum_of_squares(p + chunks[c][1], std::min(g.numel(), chunks[c][1] + kNormChunk) - chunks[c][1]);
      }
    });
    return partial;
  }
};

const VectorOpsRegistrar kRegistrar(DeviceKind::kCpu, [] {
  static CpuVectorOps ops;
  return static_cast<VectorOps*>(&ops);
});

}  // namespace
}  // namespace ort_train
