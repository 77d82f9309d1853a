// CPU kernel of Einsum: a direct loop over every combination of label values,
// output labels outermost (parallel over output elements), summed labels inner.
// Correct for any equation (repeated labels, '...' broadcasting); it does no
// contraction reordering, so it suits the small einsums of attention and
// bilinear layers rather than large chained contractions.
#include <algorithm>

#include "graph/dispatch.h"
#include "graph/ops/einsum.h"
#include "runtime/cpu/copy.h"
#include "runtime/cpu/parallel.h"
#include "runtime/kernel.h"

namespace ort_train {
namespace {

Status einsum(KernelContext& ctx) {
  std::vector<Dims> dims;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) dims.push_back(ctx.input(i).dims());
  ASSIGN_OR_RETURN(EinsumPlan plan, plan_einsum(ctx.node(), ctx.node().attr_string("equation", ""), dims));
  size_t labels = plan.label_sizes.size();
  for (int64_t& s : plan.label_sizes) s = std::max<int64_t>(s, 1);
  std::vector<bool> is_out(labels, false);
  for (int id : plan.output_labels) is_out[static_cast<size_t>(id)] = true;
  std::vector<int> summed;
  for (size_t l = 0; l < labels; ++l)
    if (!is_out[l]) summed.push_back(static_cast<int>(l));
  // Per operand and label: the stride to step (0 for broadcast size-1 dims; repeated labels add up).
  size_t nops = ctx.num_inputs();
  std::vector<std::vector<int64_t>> stride(nops, std::vector<int64_t>(labels, 0));
  for (size_t i = 0; i < nops; ++i) {
    std::vector<int64_t> cs = contiguous_strides(dims[i]);
    for (size_t d = 0; d < dims[i].size(); ++d)
      if (dims[i][d] != 1) stride[i][static_cast<size_t>(plan.operand_labels[i][d])] += cs[d];
  }
  Tensor& out = ctx.output(0);
  int64_t inner = 1;
  for (int l : summed) inner *= plan.label_sizes[static_cast<size_t>(l)];
  bool ok = dispatch_float(ctx.input(0).dtype(), [&]<typename T>() {
    std::vector<const T*> in;
    for (size_t i = 0; i < nops; ++i) in.push_back(ctx.input(i).data<T>());
    T* o = out.data<T>();
    parallel_for(out.numel(), 64, [&](int64_t b, int64_t e) {
      std::vector<int64_t> base(nops), off(nops);
      for (int64_t p = b; p < e; ++p) {
        // Operand offsets of this output element.
        int64_t rem = p;
        std::fill(base.begin(), base.end(), 0);
        for (size_t k = plan.output_labels.size(); k-- > 0;) {
          size_t l = static_cast<size_t>(plan.output_labels[k]);
          int64_t v = rem % plan.label_sizes[l];
          rem /= plan.label_sizes[l];
          for (size_t i = 0; i < nops; ++i) base[i] += v * stride[i][l];
        }
        double acc = 0;
        for (int64_t q = 0; q < inner; ++q) {
          int64_t r = q;
          off = base;
          for (size_t k = summed.size(); k-- > 0;) {
            size_t l = static_cast<size_t>(summed[k]);
            int64_t v = r % plan.label_sizes[l];
            r /= plan.label_sizes[l];
            for (size_t i = 0; i < nops; ++i) off[i] += v * stride[i][l];
          }
          double prod = 1;
          for (size_t i = 0; i < nops; ++i) prod *= static_cast<double>(in[i][off[i]]);
          acc += prod;
        }
        o[p] = static_cast<T>(acc);
      }
    });
  });
  return ok ? Status::Ok() : unsupported_dtype(ctx, ctx.input(0).dtype());
}

}  // namespace

ORT_REGISTER_CPU_KERNEL("Einsum", 12, 1000, einsum);

}  // namespace ort_train
