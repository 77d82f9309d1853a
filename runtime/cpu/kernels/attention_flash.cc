// The "flash" candidate of the CPU's com.ort_train Attention and
// AttentionGrad (attention_fusion's; semantics in graph/ops/attention.cc;
// chosen against the "gemm" candidate by measurement, attention.cc): queries
// in blocks of kQueryBlock rows, keys in blocks of kKeyBlock. The forward
// keeps a running row maximum and sum (online softmax) and rescales its
// output accumulator when the maximum grows, so only a
// kQueryBlock x kKeyBlock tile of scores exists at a time; it saves each
// row's log-sum-exp. The backward recomputes each tile's probabilities from
// Q, K and that log-sum-exp, so the [B, H, T, S] probabilities are never
// stored between the passes (the unfused graph keeps them, and the dropout
// mask, for every layer).
//
// Work is split over (batch, key/value head) groups in the backward, so the
// dK and dV of a grouped key/value head are summed by one thread in a fixed
// order: results do not depend on the thread count.
#include <cmath>
#include <limits>
#include <vector>

#include "graph/dispatch.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu/kernels/attention.h"
#include "runtime/cpu/parallel.h"

namespace ort_train {
namespace {

constexpr int64_t kQueryBlock = 64;
constexpr int64_t kKeyBlock = 128;

// Key/value head kh of batch b as [S, D] rows: K itself, or (k_transposed) a packed copy in `scratch`.
template <typename T>
const T* key_rows(const AttentionGeometry& g, const T* k, int64_t b, int64_t kh, std::vector<T>& scratch) {
  const T* head = k + (b * g.kv_heads + kh) * g.keys * g.head_size;
  if (!g.k_transposed) return head;
  scratch.resize(static_cast<size_t>(g.keys * g.head_size));
  for (int64_t d = 0; d < g.head_size; ++d)
    for (int64_t s = 0; s < g.keys; ++s) scratch[static_cast<size_t>(s * g.head_size + d)] = head[d * g.keys + s];
  return scratch.data();
}

// Scores of queries [t0, t0 + tq) against keys [s0, s0 + sk) of head (b, h) into `x` [tq, sk].
template <typename T>
void score_tile(const AttentionGeometry& g, const Operands<T>& in, const T* krows, int64_t b, int64_t h, int64_t t0,
                int64_t tq, int64_t s0, int64_t sk, T* x) {
  const T* qrows = in.q + ((b * g.heads + h) * g.queries + t0) * g.head_size;
  gemm(false, true, tq, sk, g.head_size, static_cast<T>(g.scale), qrows, g.head_size, krows + s0 * g.head_size,
       g.head_size, T(0), x, sk);
  if (!in.bias && !in.mask) return;
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t j = 0; j < sk; ++j)
      x[i * sk + j] = attention_score(g, x[i * sk + j], in.bias, in.mask, b, h, t0 + i, s0 + j);
}

template <typename T>
void forward_head(const AttentionGeometry& g, const Operands<T>& in, int64_t b, int64_t h, T* out, T* lse,
                  std::vector<T>& kpack, std::vector<T>& tile, std::vector<T>& acc, std::vector<T>& rmax,
                  std::vector<T>& rsum) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  int64_t kh = h / (g.heads / g.kv_heads);
  const T* krows = key_rows(g, in.k, b, kh, kpack);
  const T* vrows = in.v + (b * g.kv_heads + kh) * g.keys * g.value_size;
  int64_t dv = g.value_size;
  for (int64_t t0 = 0; t0 < g.queries; t0 += kQueryBlock) {
    int64_t tq = std::min(kQueryBlock, g.queries - t0);
    std::fill(acc.begin(), acc.begin() + tq * dv, T(0));
    std::fill(rmax.begin(), rmax.begin() + tq, kNegInf);
    std::fill(rsum.begin(), rsum.begin() + tq, T(0));
    for (int64_t s0 = 0; s0 < g.keys; s0 += kKeyBlock) {
      int64_t sk = std::min(kKeyBlock, g.keys - s0);
      T* x = tile.data();
      score_tile(g, in, krows, b, h, t0, tq, s0, sk, x);
      for (int64_t i = 0; i < tq; ++i) {
        T* row = x + i * sk;
        T m = rmax[i];
        for (int64_t j = 0; j < sk; ++j) m = std::max(m, row[j]);
        if (m == kNegInf) {  // every score so far is -inf: nothing to add yet
          std::fill(row, row + sk, T(0));
          continue;
        }
        T correction = rmax[i] == kNegInf ? T(0) : std::exp(rmax[i] - m);
        T sum = 0;
        for (int64_t j = 0; j < sk; ++j) {
          T p = std::exp(row[j] - m);
          sum += p;
          row[j] = p * attention_dropout_factor<T>(g, b, h, t0 + i, s0 + j);
        }
        rsum[i] = rsum[i] * correction + sum;
        rmax[i] = m;
        if (correction != T(1))
          for (int64_t c = 0; c < dv; ++c) acc[static_cast<size_t>(i * dv + c)] *= correction;
      }
      gemm(false, false, tq, dv, sk, T(1), x, sk, vrows + s0 * dv, dv, T(1), acc.data(), dv);
    }
    T* orows = out + ((b * g.heads + h) * g.queries + t0) * dv;
    T* lrow = lse + (b * g.heads + h) * g.queries + t0;
    for (int64_t i = 0; i < tq; ++i) {
      T inv = T(1) / rsum[i];  // a row of only -inf scores gives NaN, as Softmax does
      for (int64_t c = 0; c < dv; ++c) orows[i * dv + c] = acc[static_cast<size_t>(i * dv + c)] * inv;
      lrow[i] = rmax[i] + std::log(rsum[i]);
    }
  }
}

template <typename T>
void attention_forward(const AttentionGeometry& g, const Operands<T>& in, T* out, T* lse) {
  parallel_for(g.batch * g.heads, 1, [&](int64_t first, int64_t last) {
    std::vector<T> kpack, tile(kQueryBlock * kKeyBlock), acc(static_cast<size_t>(kQueryBlock * g.value_size)),
        rmax(kQueryBlock), rsum(kQueryBlock);
    for (int64_t bh = first; bh < last; ++bh)
      forward_head(g, in, bh / g.heads, bh % g.heads, out, lse, kpack, tile, acc, rmax, rsum);
  });
}

// The backward of every head reading key/value head (b, kh).
template <typename T>
void backward_group(const AttentionGeometry& g, const Operands<T>& in, const T* dout, const T* out, const T* lse,
                    int64_t b, int64_t kh, const GradOutputs<T>& grads) {
  int64_t D = g.head_size, dv = g.value_size, group = g.heads / g.kv_heads;
  std::vector<T> kpack, dkpack(static_cast<size_t>(g.keys * D), T(0));
  std::vector<T> prob(kQueryBlock * kKeyBlock), dprob(kQueryBlock * kKeyBlock), dscore(kQueryBlock * kKeyBlock);
  std::vector<T> dqacc(static_cast<size_t>(kQueryBlock * D)), rowdot(kQueryBlock);
  const T* krows = key_rows(g, in.k, b, kh, kpack);
  const T* vrows = in.v + (b * g.kv_heads + kh) * g.keys * dv;
  T* dvrows = grads.dv + (b * g.kv_heads + kh) * g.keys * dv;
  std::fill(dvrows, dvrows + g.keys * dv, T(0));
  // dK rows accumulate in dK itself, or (k_transposed) in a packed copy written out at the end.
  T* dkrows = g.k_transposed ? dkpack.data() : grads.dk + (b * g.kv_heads + kh) * g.keys * D;
  std::fill(dkrows, dkrows + g.keys * D, T(0));
  for (int64_t h = kh * group; h < (kh + 1) * group; ++h) {
    int64_t bh = b * g.heads + h;
    for (int64_t t0 = 0; t0 < g.queries; t0 += kQueryBlock) {
      int64_t tq = std::min(kQueryBlock, g.queries - t0);
      const T* qrows = in.q + (bh * g.queries + t0) * D;
      const T* dorows = dout + (bh * g.queries + t0) * dv;
      const T* orows = out + (bh * g.queries + t0) * dv;
      const T* lrow = lse + bh * g.queries + t0;
      // dO . O per row: the sum over keys of P * dP that softmax's gradient subtracts.
      for (int64_t i = 0; i < tq; ++i) {
        T s = 0;
        for (int64_t c = 0; c < dv; ++c) s += dorows[i * dv + c] * orows[i * dv + c];
        rowdot[static_cast<size_t>(i)] = s;
      }
      std::fill(dqacc.begin(), dqacc.begin() + tq * D, T(0));
      for (int64_t s0 = 0; s0 < g.keys; s0 += kKeyBlock) {
        int64_t sk = std::min(kKeyBlock, g.keys - s0);
        T* p = prob.data();
        score_tile(g, in, krows, b, h, t0, tq, s0, sk, p);
        // p: the probabilities; dprob first holds them as dropped (what O was made of).
        for (int64_t i = 0; i < tq; ++i)
          for (int64_t j = 0; j < sk; ++j) {
            T pij = std::isinf(lrow[i]) ? T(0) : std::exp(p[i * sk + j] - lrow[i]);
            p[i * sk + j] = pij;
            dprob[static_cast<size_t>(i * sk + j)] = pij * attention_dropout_factor<T>(g, b, h, t0 + i, s0 + j);
          }
        gemm(true, false, sk, dv, tq, T(1), dprob.data(), sk, dorows, dv, T(1), dvrows + s0 * dv, dv);
        gemm(false, true, tq, sk, dv, T(1), dorows, dv, vrows + s0 * dv, dv, T(0), dprob.data(), sk);
        for (int64_t i = 0; i < tq; ++i)
          for (int64_t j = 0; j < sk; ++j) {
            size_t at = static_cast<size_t>(i * sk + j);
            T dp = dprob[at] * attention_dropout_factor<T>(g, b, h, t0 + i, s0 + j);
            T ds = p[at] * (dp - rowdot[static_cast<size_t>(i)]);
            if (grads.dscores) grads.dscores[(bh * g.queries + t0 + i) * g.keys + s0 + j] = ds;
            // A filled score is a constant: no gradient reaches Q and K through it.
            dscore[at] = attention_filled(g, in.mask, b, h, t0 + i, s0 + j) ? T(0) : ds;
          }
        gemm(false, false, tq, D, sk, static_cast<T>(g.scale), dscore.data(), sk, krows + s0 * D, D, T(1),
             dqacc.data(), D);
        gemm(true, false, sk, D, tq, static_cast<T>(g.scale), dscore.data(), sk, qrows, D, T(1), dkrows + s0 * D, D);
      }
      T* dqrows = grads.dq + (bh * g.queries + t0) * D;
      std::copy(dqacc.begin(), dqacc.begin() + tq * D, dqrows);
    }
  }
  if (g.k_transposed) {
    T* dk = grads.dk + (b * g.kv_heads + kh) * g.keys * D;
    for (int64_t s = 0; s < g.keys; ++s)
      for (int64_t d = 0; d < D; ++d) dk[d * g.keys + s] = dkrows[s * D + d];
  }
}

}  // namespace

Status attention_flash(KernelContext& ctx) {
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 0, 3));
  return with_forward_args(ctx, g, [&](const auto& a) {
    using T = typename std::decay_t<decltype(a)>::Value;
    attention_forward<T>(g, a.in, a.out, a.lse);
  });
}

Status attention_grad_flash(KernelContext& ctx) {
  ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, 1, 6));
  return with_grad_args(ctx, [&](const auto& a) {
    using T = typename std::decay_t<decltype(a)>::Value;
    parallel_for(g.batch * g.kv_heads, 1, [&](int64_t first, int64_t last) {
      for (int64_t bk = first; bk < last; ++bk)
        backward_group<T>(g, a.in, a.dout, a.out, a.lse, bk / g.kv_heads, bk % g.kv_heads, a.grads);
    });
  });
}

}  // namespace ort_train
