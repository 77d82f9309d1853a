// CUDA kernels of RNN, GRU and LSTM and their gradients: the elementwise part
// of one time step over [batch, hidden] (numerics/recurrent_cells.h, the CPU
// kernels' own arithmetic) and the state copies; the GEMMs between them are
// cuBLAS calls in runtime/cuda/kernels/recurrent.cc.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_kernels/tensor_map.h"
#include "numerics/recurrent_cells.h"

namespace ort_train::cuda {

// One direction's sizes and indexing, as runtime/cpu/kernels/recurrent.h
// indexes on the host (graph/ops/recurrent.h describes `saved`).
struct RecurrentDirection {
  int cell = 2;  // RecurrentCell: 0 RNN, 1 GRU, 2 LSTM
  int64_t steps = 0, batch = 0, hidden = 0, gates = 1, directions = 1, d = 0, layout = 0;
  bool backwards = false;
  const int64_t* lens = nullptr;  // device [batch]
};

// Forward step `step`: for each (b, j) of a sequence still running, the cell
// from the projection `proj` [T*B, G*H] and the recurrent product `rec`
// [B, G*H] (GRU without linear_before_reset: `nrec` [B, H] for n); updates h
// and c [B, H] in place and writes y (layout's Y, may be null) and saved (may be null).
cudaError_t launch_recurrent_step(ElemType t, const RecurrentDirection& g, const CellFns& fns, int64_t step,
                                  const void* proj, const void* rec, const void* nrec, const void* rb_n,
                                  const void* peep, void* h, void* c, void* y, void* saved, cudaStream_t stream);
// GRU without linear_before_reset: rh = r * h per running row (0 elsewhere).
cudaError_t launch_gru_reset_product(ElemType t, const RecurrentDirection& g, const CellFns& fns, int64_t step,
                                     const void* proj, const void* rec, const void* h, void* rh, cudaStream_t stream);
// proj[row, j] += wb[j] + rb[j] (rb left out for GRU's n gate with linear_before_reset).
cudaError_t launch_add_gate_bias(ElemType t, void* proj, const void* wb, const void* rb, int64_t rows, int64_t gh,
                                 int64_t hidden, bool skip_rb_n, cudaStream_t stream);
// Between a layout's state tensor ([D, B, H] or [B, D, H]) and direction d's [B, H]:
// to_state copies [B, H] -> the state tensor.
cudaError_t launch_state_copy(ElemType t, const RecurrentDirection& g, const void* src, void* dst, bool to_state,
                              cudaStream_t stream);

// Backward step `step` (runs after the next one): per running (b, j), from dh
// (carry) + dY, the gate gradients into dxg/drg [T*B, G*H], h_prev (and GRU's
// r * h_prev) rows, LSTM's dc (in place) and peephole rows dp_rows [T*B, 3H],
// `carry` [B, H] (dh_prev's part outside R) and `step_d` [B, G*H] (what the
// GEMM with R carries to dh_prev; zeros for finished rows).
struct RecurrentGradBuffers {
  const void *saved = nullptr, *dy = nullptr, *h0 = nullptr, *c0 = nullptr, *peep = nullptr, *d_rh = nullptr;
  void *dh = nullptr, *dc = nullptr, *dxg = nullptr, *drg = nullptr, *h_prev = nullptr, *rh_prev = nullptr;
  void *dp_rows = nullptr, *carry = nullptr, *step_d = nullptr;
};
cudaError_t launch_recurrent_step_grad(ElemType t, const RecurrentDirection& g, const CellFns& fns, int64_t step,
                                       const RecurrentGradBuffers& buf, cudaStream_t stream);
// GRU without linear_before_reset: dn [B, H] = gru_dn per running row (0 elsewhere).
cudaError_t launch_gru_dn(ElemType t, const RecurrentDirection& g, const CellFns& fns, int64_t step,
                          const void* saved, const void* dy, const void* dh, void* dn, cudaStream_t stream);
// dh = carry + through_r on the rows step `step` ran.
cudaError_t launch_carry_dh(ElemType t, const RecurrentDirection& g, int64_t step, const void* carry,
                            const void* through_r, void* dh, cudaStream_t stream);

}  // namespace ort_train::cuda
