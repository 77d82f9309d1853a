// CUDA registrations of RNN, GRU and LSTM, their training forms and their
// gradients: the CPU kernels' plan (runtime/cpu/kernels/recurrent*.cc) with
// cuBLAS GEMMs (one over all steps for the input projection, one or two per
// step for the recurrence) around the step kernels of cuda_kernels/recurrent.cu,
// whose arithmetic is numerics/recurrent_cells.h, the CPU's own.
#include <cstring>
#include <optional>

#include "cuda_kernels/copy.h"
#include "cuda_kernels/recurrent.h"
#include "cuda_kernels/vector_math.h"
#include "graph/ops/recurrent.h"
#include "runtime/cuda/kernels/common.h"
#include "runtime/cuda/kernels/gemm_batched.h"

namespace ort_train::cuda {
namespace {

// One node's spec, sizes, element type and device lengths.
struct Layer {
  RecurrentSpec s;
  DType dtype = DType::kFloat;
  ElemType et = ElemType::kF32;
  int64_t steps = 0, batch = 0, in = 0, H = 0, G = 0, D = 0;
  Tensor lens;  // device int64 [batch]
  const char *x = nullptr, *w = nullptr, *r = nullptr, *bias = nullptr, *h0 = nullptr, *c0 = nullptr, *p = nullptr;
  size_t es = 4;

  bool lstm() const { return s.cell == RecurrentCell::kLstm; }
  bool gru_reset_first() const { return s.cell == RecurrentCell::kGru && !s.linear_before_reset; }
  RecurrentDirection direction(int64_t d) const {
    RecurrentDirection g;
    g.cell = static_cast<int>(s.cell);
    g.steps = steps, g.batch = batch, g.hidden = H, g.gates = G, g.directions = D, g.d = d, g.layout = s.layout;
    g.backwards = s.backwards(d);
    g.lens = lens.data<int64_t>();
    return g;
  }
  Status gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const void* b,
              int64_t ldb, double beta, void* c, int64_t ldc) const {
    if (m == 0 || n == 0 || k == 0) return Status::Ok();
    return gemm_batched(dtype, ta, tb, m, n, k, 1.0, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, 1);
  }
};

const char* bytes_of(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) && ctx.input(i).numel() > 0 ? static_cast<const char*>(ctx.input(i).raw()) : nullptr;
}

Result<Layer> read_layer(KernelContext& ctx) {
  Layer l;
  ASSIGN_OR_RETURN(l.s, recurrent_spec(ctx.node(), recurrent_forward_name(ctx.node().op_type), ctx.opset()));
  const Tensor& x = ctx.input(0);
  l.dtype = x.dtype();
  auto t = elem_type(x.dtype());
  if (!t || !(x.dtype() == DType::kFloat || x.dtype() == DType::kDouble)) return unsupported_cuda_dtype(ctx, x.dtype());
  l.et = *t;
  l.es = dtype_size(x.dtype());
  std::vector<std::optional<Dims>> dims;
  for (size_t i = 0; i < (l.lstm() ? 8u : 6u); ++i)
    dims.push_back(ctx.has_input(i) && (i < 3 || ctx.input(i).numel() > 0) ? std::optional<Dims>(ctx.input(i).dims())
                                                                  : std::nullopt);
  ASSIGN_OR_RETURN(RecurrentSizes z, recurrent_sizes(ctx.node(), l.s, dims));
  l.steps = z.steps, l.batch = z.batch, l.in = z.in, l.H = z.hidden;
  l.G = l.s.gates();
  l.D = l.s.directions;
  l.x = bytes_of(ctx, 0), l.w = bytes_of(ctx, 1), l.r = bytes_of(ctx, 2), l.bias = bytes_of(ctx, 3);
  l.h0 = bytes_of(ctx, 5);
  if (l.lstm()) l.c0 = bytes_of(ctx, 6), l.p = bytes_of(ctx, 7);
  Tensor lens_host;
  if (dims[4]) {
    ASSIGN_OR_RETURN(lens_host, host_input(ctx, 4));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> lens,
                   sequence_lengths(ctx.node(), dims[4] ? &lens_host : nullptr, l.batch, l.steps));
  ASSIGN_OR_RETURN(l.lens, temp(ctx, DType::kInt64, {l.batch}));
  if (l.batch > 0) RETURN_IF_ERROR(upload(l.lens.raw(), lens.data(), lens.size() * sizeof(int64_t)));
  return l;
}

// X by time, [T, B, I] (layout 1 transposed).
Result<const void*> inputs_by_time(KernelContext& ctx, const Layer& l, Tensor& scratch) {
  if (l.s.layout == 0) return static_cast<const void*>(l.x);
  ASSIGN_OR_RETURN(scratch, temp(ctx, l.dtype, {l.steps, l.batch, l.in}));
  ASSIGN_OR_RETURN(CopyMap map, transpose_map({l.batch, l.steps, l.in}, {1, 0, 2}, {l.steps, l.batch, l.in}));
  CUDA_RETURN_IF_ERROR(launch_gather_copy(l.x, scratch.raw(), scratch.numel(), static_cast<int>(l.es), map, stream()));
  return static_cast<const void*>(scratch.raw());
}

// Output i zero-filled, or null when the node does not ask for it.
Result<void*> zeroed_output(KernelContext& ctx, size_t i) {
  if (i >= ctx.num_outputs() || !ctx.has_output(i)) return static_cast<void*>(nullptr);
  CUDA_OUTPUT(t, ctx, i);
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(t.raw(), 0, t.nbytes(), stream()));
  return t.raw();
}

Result<Tensor> zeroed_temp(KernelContext& ctx, DType dt, Dims dims) {
  ASSIGN_OR_RETURN(Tensor t, temp(ctx, dt, std::move(dims)));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(t.raw(), 0, t.nbytes(), stream()));
  return t;
}

Status recurrent_forward(KernelContext& ctx) {
  ASSIGN_OR_RETURN(Layer l, read_layer(ctx));
  const int64_t B = l.batch, H = l.H, GH = l.G * H, TB = l.steps * B;
  Tensor xs_scratch;
  ASSIGN_OR_RETURN(const void* xs, inputs_by_time(ctx, l, xs_scratch));
  ASSIGN_OR_RETURN(void* y, zeroed_output(ctx, 0));
  ASSIGN_OR_RETURN(void* y_h, zeroed_output(ctx, 1));
  void* y_c = nullptr;
  if (l.lstm()) { ASSIGN_OR_RETURN(y_c, zeroed_output(ctx, 2)); }
  ASSIGN_OR_RETURN(void* saved, zeroed_output(ctx, l.lstm() ? 3 : 2));
  ASSIGN_OR_RETURN(Tensor proj, temp(ctx, l.dtype, {TB, GH}));
  ASSIGN_OR_RETURN(Tensor rec, zeroed_temp(ctx, l.dtype, {B, GH}));
  ASSIGN_OR_RETURN(Tensor h, temp(ctx, l.dtype, {B, H}));
  ASSIGN_OR_RETURN(Tensor c, zeroed_temp(ctx, l.dtype, {B, H}));
  ASSIGN_OR_RETURN(Tensor rh, temp(ctx, l.dtype, {B, H}));
  ASSIGN_OR_RETURN(Tensor nrec, temp(ctx, l.dtype, {B, H}));
  for (int64_t d = 0; d < l.D; ++d) {
    const RecurrentDirection g = l.direction(d);
    const CellFns fns = l.s.cell_fns(d);
    const char* w = l.w + d * GH * l.in * l.es;
    const char* r = l.r + d * GH * H * l.es;
    RETURN_IF_ERROR(l.gemm(false, true, TB, GH, l.in, xs, l.in, w, l.in, 0.0, proj.raw(), GH));
    if (TB > 0 && l.bias) {
      const char* wb = l.bias + d * 2 * GH * l.es;
      CUDA_RETURN_IF_ERROR(launch_add_gate_bias(l.et, proj.raw(), wb, wb + GH * l.es, TB, GH, H,
                                                l.s.cell == RecurrentCell::kGru && l.s.linear_before_reset, stream()));
    }
    const char* rb_n = l.bias && l.s.cell == RecurrentCell::kGru && l.s.linear_before_reset
                           ? l.bias + (d * 2 * GH + GH + 2 * H) * l.es : nullptr;
    if (l.h0) CUDA_RETURN_IF_ERROR(launch_state_copy(l.et, g, l.h0, h.raw(), false, stream()));
    else CUDA_RETURN_IF_ERROR(cudaMemsetAsync(h.raw(), 0, h.nbytes(), stream()));
    if (l.c0) CUDA_RETURN_IF_ERROR(launch_state_copy(l.et, g, l.c0, c.raw(), false, stream()));
    else CUDA_RETURN_IF_ERROR(cudaMemsetAsync(c.raw(), 0, c.nbytes(), stream()));
    const char* peep = l.p ? l.p + d * 3 * H * l.es : nullptr;
    for (int64_t step = 0; step < l.steps; ++step) {
      RETURN_IF_ERROR(l.gemm(false, true, B, l.gru_reset_first() ? 2 * H : GH, H, h.raw(), H, r, H, 0.0, rec.raw(), GH));
      if (l.gru_reset_first()) {
        CUDA_RETURN_IF_ERROR(launch_gru_reset_product(l.et, g, fns, step, proj.raw(), rec.raw(), h.raw(), rh.raw(),
                                                      stream()));
        RETURN_IF_ERROR(l.gemm(false, true, B, H, H, rh.raw(), H, r + 2 * H * H * l.es, H, 0.0, nrec.raw(), H));
      }
      CUDA_RETURN_IF_ERROR(launch_recurrent_step(l.et, g, fns, step, proj.raw(), rec.raw(), nrec.raw(), rb_n, peep,
                                                 h.raw(), c.raw(), y, saved, stream()));
    }
    if (y_h) CUDA_RETURN_IF_ERROR(launch_state_copy(l.et, g, h.raw(), y_h, true, stream()));
    if (y_c) CUDA_RETURN_IF_ERROR(launch_state_copy(l.et, g, c.raw(), y_c, true, stream()));
  }
  return Status::Ok();
}

// The per-direction scratch of the backward.
struct GradScratch {
  Tensor dxg, drg, h_prev, rh_prev, dp_rows, dh, dc, carry, through_r, d_rh, dn, step_d, ones;
};

Result<GradScratch> grad_scratch(KernelContext& ctx, const Layer& l) {
  const int64_t B = l.batch, H = l.H, GH = l.G * H, TB = l.steps * B;
  GradScratch s;
  ASSIGN_OR_RETURN(s.dxg, temp(ctx, l.dtype, {TB, GH}));
  ASSIGN_OR_RETURN(s.drg, temp(ctx, l.dtype, {TB, GH}));
  ASSIGN_OR_RETURN(s.h_prev, temp(ctx, l.dtype, {TB, H}));
  ASSIGN_OR_RETURN(s.rh_prev, temp(ctx, l.dtype, {TB, H}));
  ASSIGN_OR_RETURN(s.dp_rows, temp(ctx, l.dtype, {TB, 3 * H}));
  for (Tensor* t : {&s.dh, &s.dc, &s.carry, &s.through_r, &s.d_rh, &s.dn}) {
    ASSIGN_OR_RETURN(*t, temp(ctx, l.dtype, {B, H}));
  }
  ASSIGN_OR_RETURN(s.step_d, temp(ctx, l.dtype, {B, GH}));
  ASSIGN_OR_RETURN(s.ones, temp(ctx, l.dtype, {TB}));
  const float one_f = 1.f;
  const double one_d = 1.0;
  CUDA_RETURN_IF_ERROR(launch_fill(s.ones.raw(), TB, static_cast<int>(l.es),
                                   l.dtype == DType::kFloat ? static_cast<const void*>(&one_f) : &one_d, stream()));
  return s;
}

Status recurrent_grad(KernelContext& ctx) {
  ASSIGN_OR_RETURN(Layer l, read_layer(ctx));
  const int64_t B = l.batch, H = l.H, GH = l.G * H, TB = l.steps * B;
  const size_t n = l.lstm() ? 8 : 6;
  const char* saved = bytes_of(ctx, n);
  if (!saved || ctx.input(n).numel() != l.D * TB * (l.G + 2) * H)
    return shape_error("{}: the saved state does not fit the inputs", ctx.node().describe());
  const char* dy = bytes_of(ctx, n + 1);
  const char* dy_h = bytes_of(ctx, n + 2);
  const char* dy_c = l.lstm() ? bytes_of(ctx, n + 3) : nullptr;
  void* out[8] = {};
  for (size_t i = 0; i < n; ++i)
    if (i != 4) { ASSIGN_OR_RETURN(out[i], zeroed_output(ctx, i)); }
  Tensor xs_scratch;
  ASSIGN_OR_RETURN(const void* xs, inputs_by_time(ctx, l, xs_scratch));
  ASSIGN_OR_RETURN(Tensor dxs, zeroed_temp(ctx, l.dtype, {TB, l.in}));
  ASSIGN_OR_RETURN(GradScratch s, grad_scratch(ctx, l));
  for (int64_t d = 0; d < l.D; ++d) {
    const RecurrentDirection g = l.direction(d);
    const CellFns fns = l.s.cell_fns(d);
    const char* w = l.w + d * GH * l.in * l.es;
    const char* r = l.r + d * GH * H * l.es;
    for (Tensor* t : {&s.dxg, &s.drg, &s.h_prev, &s.rh_prev, &s.dp_rows})
      CUDA_RETURN_IF_ERROR(cudaMemsetAsync(t->raw(), 0, t->nbytes(), stream()));
    if (dy_h) CUDA_RETURN_IF_ERROR(launch_state_copy(l.et, g, dy_h, s.dh.raw(), false, stream()));
    else CUDA_RETURN_IF_ERROR(cudaMemsetAsync(s.dh.raw(), 0, s.dh.nbytes(), stream()));
    if (dy_c) CUDA_RETURN_IF_ERROR(launch_state_copy(l.et, g, dy_c, s.dc.raw(), false, stream()));
    else CUDA_RETURN_IF_ERROR(cudaMemsetAsync(s.dc.raw(), 0, s.dc.nbytes(), stream()));
    RecurrentGradBuffers buf;
    buf.saved = saved, buf.dy = dy, buf.h0 = l.h0, buf.c0 = l.c0;
    buf.peep = l.p ? l.p + d * 3 * H * l.es : nullptr;
    buf.d_rh = s.d_rh.raw(), buf.dh = s.dh.raw(), buf.dc = s.dc.raw(), buf.dxg = s.dxg.raw(), buf.drg = s.drg.raw();
    buf.h_prev = s.h_prev.raw(), buf.rh_prev = s.rh_prev.raw(), buf.dp_rows = l.p ? s.dp_rows.raw() : nullptr;
    buf.carry = s.carry.raw(), buf.step_d = s.step_d.raw();
    for (int64_t step = l.steps - 1; step >= 0; --step) {
      if (l.gru_reset_first()) {
        CUDA_RETURN_IF_ERROR(launch_gru_dn(l.et, g, fns, step, saved, dy, s.dh.raw(), s.dn.raw(), stream()));
        RETURN_IF_ERROR(l.gemm(false, false, B, H, H, s.dn.raw(), H, r + 2 * H * H * l.es, H, 0.0, s.d_rh.raw(), H));
      }
      CUDA_RETURN_IF_ERROR(launch_recurrent_step_grad(l.et, g, fns, step, buf, stream()));
      RETURN_IF_ERROR(l.gemm(false, false, B, H, GH, s.step_d.raw(), GH, r, H, 0.0, s.through_r.raw(), H));
      CUDA_RETURN_IF_ERROR(launch_carry_dh(l.et, g, step, s.carry.raw(), s.through_r.raw(), s.dh.raw(), stream()));
    }
    RETURN_IF_ERROR(l.gemm(false, false, TB, l.in, GH, s.dxg.raw(), GH, w, l.in, 1.0, dxs.raw(), l.in));
    if (out[1]) {
      RETURN_IF_ERROR(l.gemm(true, false, GH, l.in, TB, s.dxg.raw(), GH, xs, l.in, 0.0,
                             static_cast<char*>(out[1]) + d * GH * l.in * l.es, l.in));
    }
    if (out[2]) {
      char* dr = static_cast<char*>(out[2]) + d * GH * H * l.es;
      RETURN_IF_ERROR(l.gemm(true, false, GH, H, TB, s.drg.raw(), GH, s.h_prev.raw(), H, 0.0, dr, H));
      if (l.gru_reset_first())  // GRU's R_h multiplied r * h, not h
        RETURN_IF_ERROR(l.gemm(true, false, H, H, TB, static_cast<char*>(s.drg.raw()) + 2 * H * l.es, GH,
                               s.rh_prev.raw(), H, 0.0, dr + 2 * H * H * l.es, H));
    }
    if (out[3]) {
      char* db = static_cast<char*>(out[3]) + d * 2 * GH * l.es;
      RETURN_IF_ERROR(l.gemm(false, false, 1, GH, TB, s.ones.raw(), TB, s.dxg.raw(), GH, 0.0, db, GH));
      RETURN_IF_ERROR(l.gemm(false, false, 1, GH, TB, s.ones.raw(), TB, s.drg.raw(), GH, 0.0, db + GH * l.es, GH));
    }
    if (l.lstm() && out[7] && l.p)
      RETURN_IF_ERROR(l.gemm(false, false, 1, 3 * H, TB, s.ones.raw(), TB, s.dp_rows.raw(), 3 * H, 0.0,
                             static_cast<char*>(out[7]) + d * 3 * H * l.es, 3 * H));
    if (out[5]) CUDA_RETURN_IF_ERROR(launch_state_copy(l.et, g, s.dh.raw(), out[5], true, stream()));
    if (l.lstm() && out[6]) CUDA_RETURN_IF_ERROR(launch_state_copy(l.et, g, s.dc.raw(), out[6], true, stream()));
  }
  if (out[0] && TB * l.in > 0) {
    if (l.s.layout == 0) {
      CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(out[0], dxs.raw(), dxs.nbytes(), cudaMemcpyDeviceToDevice, stream()));
    } else {
      ASSIGN_OR_RETURN(CopyMap map, transpose_map({l.steps, l.batch, l.in}, {1, 0, 2}, {l.batch, l.steps, l.in}));
      CUDA_RETURN_IF_ERROR(launch_gather_copy(dxs.raw(), out[0], dxs.numel(), static_cast<int>(l.es), map, stream()));
    }
  }
  return Status::Ok();
}

}  // namespace

ORT_REGISTER_CUDA_KERNEL("RNN", 7, 1000, recurrent_forward);
ORT_REGISTER_CUDA_KERNEL("GRU", 7, 1000, recurrent_forward);
ORT_REGISTER_CUDA_KERNEL("LSTM", 7, 1000, recurrent_forward);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "RNNTraining", 1, 1000, recurrent_forward);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "GRUTraining", 1, 1000, recurrent_forward);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "LSTMTraining", 1, 1000, recurrent_forward);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "RNNGrad", 1, 1000, recurrent_grad);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "GRUGrad", 1, 1000, recurrent_grad);
ORT_REGISTER_CUDA_KERNEL_IN_DOMAIN(kOrtTrainDomain, "LSTMGrad", 1, 1000, recurrent_grad);

}  // namespace ort_train::cuda
