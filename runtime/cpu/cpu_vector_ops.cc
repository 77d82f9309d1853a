// The training loop's vector arithmetic on the host, on the OpenMP pool.
#include <algorithm>
#include <array>
#include <cmath>

#include "runtime/cpu/parallel.h"
#include "runtime/vector_ops.h"

namespace ort_train {
namespace {

constexpr int64_t kNormChunk = 65536;  // elements per partial sum of the norm

Status check_float_pair(const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype() != DType::kFloat || b.dtype() != DType::kFloat || a.numel() != b.numel())
    return invalid_argument("{}: expected two float32 tensors of the same size, got {} {} and {} {}", what,
                            dtype_name(a.dtype()), dims_to_string(a.dims()), dtype_name(b.dtype()),
                            dims_to_string(b.dims()));
  if (a.device() != DeviceKind::kCpu || b.device() != DeviceKind::kCpu)
    return invalid_argument("{}: expected host tensors", what);
  return Status::Ok();
}

class CpuVectorOps : public VectorOps {
 public:
  Status add_into(const Tensor& acc, const Tensor& x) override {
    RETURN_IF_ERROR(check_float_pair(acc, x, "add_into"));
    float* a = acc.data<float>();
    const float* b = x.data<float>();
    parallel_for(acc.numel(), 1 << 14, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) a[k] += b[k];
    });
    return Status::Ok();
  }
  Status scale(const Tensor& t, float s) override {
    RETURN_IF_ERROR(check_float_pair(t, t, "scale"));
    float* a = t.data<float>();
    parallel_for(t.numel(), 1 << 14, [&](int64_t lo, int64_t hi) {
      for (int64_t k = lo; k < hi; ++k) a[k] *= s;
    });
    return Status::Ok();
  }
  Result<double> global_norm(const std::vector<Tensor>& ts) override {
    // Partial sums per fixed chunk, added in chunk order: the same result for any thread count.
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
        double sq = 0;
        for (int64_t k = chunks[c][1], end = std::min(g.numel(), chunks[c][1] + kNormChunk); k < end; ++k)
          sq += static_cast<double>(p[k]) * p[k];
        partial[static_cast<size_t>(c)] = sq;
      }
    });
    double sq = 0;
    for (double v : partial) sq += v;
    return std::sqrt(sq);
  }
};

const VectorOpsRegistrar kRegistrar(DeviceKind::kCpu, [] {
  static CpuVectorOps ops;
  return static_cast<VectorOps*>(&ops);
});

}  // namespace
}  // namespace ort_train
