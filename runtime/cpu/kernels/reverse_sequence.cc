// CPU kernel of ReverseSequence: along the time axis, each batch entry's
// first sequence_lens[b] positions reversed, the rest copied
// (numerics/index_ops.h's reversed_time and graph/ops/reverse_sequence.h's
// view, the CUDA kernel's too).
#include <cstring>

#include "graph/ops/reverse_sequence.h"
#include "numerics/index_ops.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status reverse_sequence(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  ASSIGN_OR_RETURN(ReverseSequenceView v, reverse_sequence_view(ctx.node(), x.dims(), ctx.input(1)));
  const int64_t batch = v.batch_major ? v.d0 : v.d1, steps = v.batch_major ? v.d1 : v.d0;
  const size_t bytes = static_cast<size_t>(v.inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(ctx.output(0).raw());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < steps; ++t) {
      const int64_t from = reversed_time(t, v.lens[static_cast<size_t>(b)]);
      const int64_t o = v.batch_major ? b * steps + t : t * batch + b;
      const int64_t i = v.batch_major ? b * steps + from : from * batch + b;
      std::memcpy(dst + o * bytes, src + i * bytes, bytes);
    }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("ReverseSequence", 10, 1000, reverse_sequence);

}  // namespace ort_train
