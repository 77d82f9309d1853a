// CPU kernel of ReverseSequence: along the time axis, each batch entry's
// first sequence_lens[b] positions reversed, the rest copied
// (numerics/index_ops.h's reversed_time, the CUDA kernel's too).
#include <cstring>

#include "numerics/index_ops.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status reverse_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> lens = ctx.input(1).to_int64_vector();
  const bool batch_major = ctx.node().attr_int("batch_axis", 1) == 0;
  const int64_t d0 = x.dims()[0], d1 = x.dims()[1];
  const int64_t batch = batch_major ? d0 : d1, steps = batch_major ? d1 : d0;
  if (static_cast<int64_t>(lens.size()) != batch)
    return shape_error("{}: sequence_lens has {} entries for a batch of {}", ctx.node().describe(), lens.size(), batch);
  for (int64_t l : lens)
    if (l < 0 || l > steps) return invalid_argument("{}: sequence length {} outside [0, {}]", ctx.node().describe(), l, steps);
  const int64_t inner = d0 * d1 != 0 ? x.numel() / (d0 * d1) : 0;
  const size_t bytes = static_cast<size_t>(inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(ctx.output(0).raw());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t from = reversed_time(t, lens[static_cast<size_t>(b)]);
      const int64_t o = batch_major ? b * steps + t : t * batch + b;
      const int64_t i = batch_major ? b * steps + from : from * batch + b;
      std::memcpy(dst + o * bytes, src + i * bytes, bytes);
    }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("ReverseSequence", 10, 1000, reverse_sequence);

}  // namespace ort_train
