// The flash attention kernels' algorithms (cuda_kernels/attention_flash16.cu,
// attention_flash16_backward.cu) replayed on the host, lane by lane, through the same tile maps
// (mma_fragments.h): Q held as A tiles, S = Q K^T as C tiles, scores through
// attention_score, running maxima reduced over a row's four lanes, P rounded
// to 16 bits and read in place as A tiles, O += P V, O / sum and LSE at the
// end. Its outputs must match the CPU's 16-bit attention (the cublas
// candidate's arithmetic) within the measured choice's agreement, so the
// kernel, if it computes what it is written to, is never dropped as wrong.
// The mma instruction itself is the plain product of the tiles.
#include <cmath>
#include <vector>

#include "cuda_kernels/attention_flash16.h"
#include "cuda_kernels/mma_fragments.h"
#include "numerics/counter_random.h"
#include "numerics/float16.h"
#include "runtime/kernel_choice.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

constexpr int kWarps = 4, kKeys = 64;

// One lane's registers of an m16n8k16 product: C values += sum over k of the
// A tile's and B tile's elements (A 16 x 16 row-major, B 16 x 8 k x n), each
// element found where the maps put it.
struct WarpTiles {
  float a[32][8];  // A values per lane
  float b[32][4];
  void mma(float (&c)[32][4]) const {
    float A[16][16], B[16][8];
    for (int lane = 0; lane < 32; ++lane) {
      for (int i = 0; i < 8; ++i) A[mma_a_index(lane, i).row][mma_a_index(lane, i).col] = a[lane][i];
      for (int i = 0; i < 4; ++i) B[mma_b_index(lane, i).row][mma_b_index(lane, i).col] = b[lane][i];
    }
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 4; ++i) {
        MmaIndex at = mma_c_index(lane, i);
        float sum = 0;
        for (int k = 0; k < 16; ++k) sum += A[at.row][k] * B[k][at.col];
        c[lane][i] += sum;
      }
  }
};

template <typename H>
float rounded(float x) {
  return static_cast<float>(H(x));
}

// C tiles (16 x 8 each, 8 of them: 16 x 64) of one warp: c[lane][tile][value].
using WarpRow64 = float[32][8][4];

// c = A (16 rows of `rows` from row0, D columns) times tile^T (tile [64][D] from
// tile_row0), through the maps: the kernel's rows_times_tile_t.
template <int D>
void rows_times_tile_t(const float* rows, int64_t row0, int64_t row_limit, const float* tile, int64_t tile_row0,
                       int64_t tile_limit, WarpRow64& c) {
  for (int lane = 0; lane < 32; ++lane)
    for (int nb = 0; nb < 8; ++nb)
      for (int i = 0; i < 4; ++i) c[lane][nb][i] = 0.f;
  for (int nb = 0; nb < 8; ++nb) {
    float acc[32][4] = {};
    for (int kk = 0; kk < D / 16; ++kk) {
      WarpTiles w;
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 8; ++i) {
          MmaIndex at = mma_a_index(lane, i);
          int64_t r = row0 + at.row;
          w.a[lane][i] = r < row_limit ? rows[r * D + kk * 16 + at.col] : 0.f;
        }
        for (int i = 0; i < 4; ++i) {
          MmaIndex bt = mma_b_index(lane, i);
          int64_t r = tile_row0 + nb * 8 + bt.col;
          w.b[lane][i] = r < tile_limit ? tile[r * D + kk * 16 + bt.row] : 0.f;
        }
      }
      w.mma(acc);
    }
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < 4; ++i) c[lane][nb][i] = acc[lane][i];
  }
}

// acc (16 x D) += round(p) (16 x 64 C tiles read in place as A) times tile
// (64 rows from tile_row0, D columns): the kernel's c_tiles_times_tile.
template <typename H, int D>
void c_tiles_times_tile(const WarpRow64& p, const float* tile, int64_t tile_row0, int64_t tile_limit,
                        float (&acc)[32][D / 8][4]) {
  for (int j = 0; j < 4; ++j)
    for (int nd = 0; nd < D / 8; ++nd) {
      WarpTiles w;
      for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < 8; ++i) w.a[lane][i] = rounded<H>(p[lane][2 * j + mma_a_from_c_tile(i)][mma_a_from_c_value(i)]);
        for (int i = 0; i < 4; ++i) {
          MmaIndex bt = mma_b_index(lane, i);
          int64_t r = tile_row0 + j * 16 + bt.row;
          w.b[lane][i] = r < tile_limit ? tile[r * D + nd * 8 + bt.col] : 0.f;
        }
      }
      float c[32][4];
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 4; ++i) c[lane][i] = acc[lane][nd][i];
      w.mma(c);
      for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < 4; ++i) acc[lane][nd][i] = c[lane][i];
    }
}

// O (rounded to H, as float) and LSE for one (b, h) of 16-bit-valued float
// Q [T, D], K [S, D], V [S, D] with attention_score's mask and bias: the
// forward kernel's steps.
template <typename H, int D>
void emulate(const AttentionGeometry& g, const float* q, const float* k, const float* v, const float* bias,
             const bool* mask, float* out, float* lse) {
  const int64_t T = g.queries, S = g.keys;
  auto row_shift = [](float mx) { return std::isinf(mx) ? 0.f : mx; };  // attention_row_shift
  for (int64_t t0 = 0; t0 < T; t0 += 16) {  // one warp's rows (the block's four warps are independent)
    static float o[32][D / 8][4];
    float m[32][2], l[32][2];
    for (int lane = 0; lane < 32; ++lane) {
      m[lane][0] = m[lane][1] = -INFINITY;
      l[lane][0] = l[lane][1] = 0;
      for (int nd = 0; nd < D / 8; ++nd)
        for (int i = 0; i < 4; ++i) o[lane][nd][i] = 0;
    }
    for (int64_t s0 = 0; s0 < S; s0 += kKeys) {
      static WarpRow64 sc;
      rows_times_tile_t<D>(q, t0, T, k, s0, S, sc);
      float tile_max[32][2];
      for (int lane = 0; lane < 32; ++lane) {
        tile_max[lane][0] = tile_max[lane][1] = -INFINITY;
        for (int nb = 0; nb < kKeys / 8; ++nb)
          for (int i = 0; i < 4; ++i) {
            MmaIndex at = mma_c_index(lane, i);
            int64_t t = t0 + at.row, s = s0 + nb * 8 + at.col;
            float x = s < S && t < T ? attention_score<float>(g, static_cast<float>(g.scale) * sc[lane][nb][i],
                                                               bias, mask, 0, 0, t, s)
                                     : -INFINITY;
            sc[lane][nb][i] = x;
            tile_max[lane][i >> 1] = std::fmax(tile_max[lane][i >> 1], x);
          }
      }
      float shift[32][2];
      for (int lane = 0; lane < 32; ++lane)
        for (int r = 0; r < 2; ++r) {
          float quad = -INFINITY;  // __shfl_xor_sync over lanes ^1 and ^2: the row's four lanes
          for (int other = lane & ~3; other < (lane & ~3) + 4; ++other) quad = std::fmax(quad, tile_max[other][r]);
          float grown = std::fmax(m[lane][r], quad);
          float factor = std::exp(row_shift(m[lane][r]) - row_shift(grown));
          m[lane][r] = grown;
          shift[lane][r] = row_shift(grown);
          l[lane][r] *= factor;
          for (int nd = 0; nd < D / 8; ++nd) o[lane][nd][2 * r] *= factor, o[lane][nd][2 * r + 1] *= factor;
        }
      for (int lane = 0; lane < 32; ++lane)
        for (int nb = 0; nb < kKeys / 8; ++nb)
          for (int i = 0; i < 4; ++i) {
            float p = std::exp(sc[lane][nb][i] - shift[lane][i >> 1]);
            l[lane][i >> 1] += p;
            MmaIndex at = mma_c_index(lane, i);
            sc[lane][nb][i] = p * attention_dropout_factor<float>(g, 0, 0, t0 + at.row, s0 + nb * 8 + at.col);
          }
      c_tiles_times_tile<H, D>(sc, v, s0, S, o);
    }
    for (int lane = 0; lane < 32; ++lane) {
      float sum[2];
      for (int r = 0; r < 2; ++r) {
        sum[r] = 0;
        for (int other = lane & ~3; other < (lane & ~3) + 4; ++other) sum[r] += l[other][r];
      }
      for (int nd = 0; nd < D / 8; ++nd)
        for (int i = 0; i < 4; ++i) {
          MmaIndex at = mma_c_index(lane, i);
          int64_t t = t0 + at.row;
          if (t < T) out[t * D + nd * 8 + at.col] = rounded<H>(o[lane][nd][i] * (1.f / sum[i >> 1]));
        }
      if ((lane & 3) == 0)
        for (int r = 0; r < 2; ++r) {
          int64_t t = t0 + (lane >> 2) + 8 * r;
          if (t < T) lse[t] = row_shift(m[lane][r]) + std::log(sum[r]);
        }
    }
  }
}

// The backward kernel for one (b, head), one head per key/value head, keys as
// rows: dQ summed in float (the kernel's atomics), dK and dV rounded at the end.
template <typename H, int D>
void emulate_backward(const AttentionGeometry& g, const float* q, const float* k, const float* v, const float* dout,
                      const float* out, const float* lse, const float* bias, const bool* mask, float* dq, float* dk,
                      float* dv, float* dscores) {
  const int64_t T = g.queries, S = g.keys;
  const float scale = static_cast<float>(g.scale);
  std::vector<float> dq32(static_cast<size_t>(T * D), 0.f);
  std::vector<float> dot(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    float sum = 0;
    for (int d = 0; d < D; ++d) sum += dout[t * D + d] * out[t * D + d];
    dot[static_cast<size_t>(t)] = sum;
  }
  for (int64_t s0 = 0; s0 < S; s0 += kKeys) {
    std::vector<float> dst(static_cast<size_t>(kKeys * 64));  // dS^T of the block, rounded
    static float dk_acc[kWarps][32][D / 8][4], dv_acc[kWarps][32][D / 8][4];
    for (auto* a : {&dk_acc, &dv_acc})
      for (auto& x : *a)
        for (auto& y : x)
          for (auto& z : y)
            for (float& f : z) f = 0;
    for (int64_t q0 = 0; q0 < T; q0 += 64) {
      for (int warp = 0; warp < kWarps; ++warp) {
        const int64_t w0 = s0 + warp * 16;
        static WarpRow64 p, dp, pd;
        rows_times_tile_t<D>(k, w0, S, q, q0, T, p);
        rows_times_tile_t<D>(v, w0, S, dout, q0, T, dp);
        for (int lane = 0; lane < 32; ++lane)
          for (int nb = 0; nb < 8; ++nb)
            for (int i = 0; i < 4; ++i) {
              MmaIndex c = mma_c_index(lane, i);
              int64_t s = w0 + c.row, t = q0 + nb * 8 + c.col;
              float prob = 0, factor = 1, ds = 0;
              bool filled = false;
              if (s < S && t < T) {
                float x = attention_score<float>(g, scale * p[lane][nb][i], bias, mask, 0, 0, t, s);
                prob = std::isinf(lse[t]) ? 0.f : std::exp(x - lse[t]);
                factor = attention_dropout_factor<float>(g, 0, 0, t, s);
                ds = prob * (dp[lane][nb][i] * factor - dot[static_cast<size_t>(t)]);
                filled = attention_filled(g, mask, 0, 0, t, s);
                dscores[t * S + s] = ds;
              }
              pd[lane][nb][i] = prob * factor;
              p[lane][nb][i] = filled ? 0.f : ds;
              dst[static_cast<size_t>((warp * 16 + c.row) * 64 + nb * 8 + c.col)] = rounded<H>(p[lane][nb][i]);
            }
        c_tiles_times_tile<H, D>(pd, dout, q0, T, dv_acc[warp]);
        c_tiles_times_tile<H, D>(p, q, q0, T, dk_acc[warp]);
      }
      // dQ: each warp's 16 queries, dS read transposed from dS^T, times the block's keys.
      for (int warp = 0; warp < kWarps; ++warp)
        for (int nd = 0; nd < D / 8; ++nd) {
          float acc[32][4] = {};
          for (int kk = 0; kk < kKeys / 16; ++kk) {
            WarpTiles w;
            for (int lane = 0; lane < 32; ++lane) {
              for (int i = 0; i < 8; ++i) {
                MmaIndex at = mma_a_index(lane, i);
                w.a[lane][i] = dst[static_cast<size_t>((kk * 16 + at.col) * 64 + warp * 16 + at.row)];
              }
              for (int i = 0; i < 4; ++i) {
                MmaIndex bt = mma_b_index(lane, i);
                int64_t key = s0 + kk * 16 + bt.row;
                w.b[lane][i] = key < S ? k[key * D + nd * 8 + bt.col] : 0.f;
              }
            }
            w.mma(acc);
          }
          for (int lane = 0; lane < 32; ++lane)
            for (int i = 0; i < 4; ++i) {
              MmaIndex c = mma_c_index(lane, i);
              int64_t t = q0 + warp * 16 + c.row;
              if (t < T) dq32[static_cast<size_t>(t * D + nd * 8 + c.col)] += scale * acc[lane][i];
            }
        }
    }
    for (int warp = 0; warp < kWarps; ++warp)
      for (int lane = 0; lane < 32; ++lane)
        for (int nd = 0; nd < D / 8; ++nd)
          for (int i = 0; i < 4; ++i) {
            MmaIndex c = mma_c_index(lane, i);
            int64_t s = s0 + warp * 16 + c.row;
            if (s < S) {
              dk[s * D + nd * 8 + c.col] = rounded<H>(scale * dk_acc[warp][lane][nd][i]);
              dv[s * D + nd * 8 + c.col] = rounded<H>(dv_acc[warp][lane][nd][i]);
            }
          }
  }
  for (int64_t i = 0; i < T * D; ++i) dq[i] = rounded<H>(dq32[static_cast<size_t>(i)]);
}

// One (batch, head) of 16-bit attention with a causal mask, a bias and
// dropout: its node's attributes, operands and the geometry the kernels get.
struct Problem {
  static constexpr int D = 64;
  static constexpr int64_t T = 70, S = 100;
  Tensor q = narrowed<BFloat16>(random_tensor({1, 1, T, D}, 61, -2, 2));
  Tensor k = narrowed<BFloat16>(random_tensor({1, 1, S, D}, 62, -2, 2));
  Tensor v = narrowed<BFloat16>(random_tensor({1, 1, S, D}, 63));
  Tensor bias = random_tensor({1, 1, 1, S}, 64, -3, 0);
  Tensor mask = Tensor::host(DType::kBool, {1, 1, T, S});
  std::vector<Attribute> attrs{Attribute::make_float("scale", 0.125f), Attribute::make_float("mask_fill", -1e9f),
                               Attribute::make_float("dropout_ratio", 0.1f), Attribute::make_int("seed", 3)};
  AttentionGeometry g;
  Problem() {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = 0; s < S; ++s) mask.data<bool>()[t * S + s] = s <= t + (S - T);
    g.batch = g.heads = g.kv_heads = 1;
    g.queries = T;
    g.keys = S;
    g.head_size = g.value_size = D;
    g.scale = 0.125;
    g.bias_stride[3] = 1;
    g.mask_stride[2] = S;
    g.mask_stride[3] = 1;
    g.mask_fill = -1e9;
    // The node's dropout stream (runtime/attention_geometry.cc): seed 3, run seed 0, step 0.
    g.dropout_ratio = 0.1f;
    g.seed = mix64(3 ^ mix64(0));
  }
  NodeSpec forward() const { return {"Attention", {q, k, v, bias, mask}, attrs, 2, 1, {}, kOrtTrainDomain}; }
};

}  // namespace

TEST_CASE("flash attention's algorithm, replayed lane by lane, agrees with the 16-bit attention of the CPU",
          "[cuda][mma]") {
  Problem pr;
  REQUIRE(attention_flash16_supports(pr.g));
  auto cpu = run_node(pr.forward());
  Tensor qf = widened<BFloat16>(pr.q), kf = widened<BFloat16>(pr.k), vf = widened<BFloat16>(pr.v);
  Tensor out = Tensor::host(DType::kFloat, {1, 1, Problem::T, Problem::D});
  Tensor lse = Tensor::host(DType::kFloat, {1, 1, Problem::T});
  emulate<BFloat16, Problem::D>(pr.g, qf.data<float>(), kf.data<float>(), vf.data<float>(), pr.bias.data<float>(),
                                pr.mask.data<bool>(), out.data<float>(), lse.data<float>());
  double o_off = relative_disagreement(out, widened<BFloat16>(cpu[0]));
  double lse_off = relative_disagreement(lse, cpu[1]);
  INFO("O " << o_off << " of the largest, LSE " << lse_off);
  CHECK(o_off <= 2 * 0.0078125);  // two bfloat16 units: P rounded before, O after normalizing
  CHECK(lse_off <= 1e-5);
  CHECK(o_off <= kernel_choice_agreement(DType::kBFloat16));
}

TEST_CASE("flash attention's backward, replayed lane by lane, agrees with the 16-bit gradient of the CPU",
          "[cuda][mma]") {
  Problem pr;
  REQUIRE(attention_flash16_backward_supports(pr.g));
  auto fwd = run_node(pr.forward());
  Tensor dout = narrowed<BFloat16>(random_tensor({1, 1, Problem::T, Problem::D}, 75));
  NodeSpec grad{"AttentionGrad", {dout, pr.q, pr.k, pr.v, fwd[0], fwd[1], pr.bias, pr.mask}, pr.attrs, 4, 1, {},
                kOrtTrainDomain};
  auto cpu = run_node(grad);
  Tensor qf = widened<BFloat16>(pr.q), kf = widened<BFloat16>(pr.k), vf = widened<BFloat16>(pr.v);
  Tensor dof = widened<BFloat16>(dout), of = widened<BFloat16>(fwd[0]);
  Tensor dq = Tensor::host(DType::kFloat, {1, 1, Problem::T, Problem::D});
  Tensor dk = Tensor::host(DType::kFloat, {1, 1, Problem::S, Problem::D});
  Tensor dv = Tensor::host(DType::kFloat, {1, 1, Problem::S, Problem::D});
  Tensor ds = Tensor::host(DType::kFloat, {1, 1, Problem::T, Problem::S});
  emulate_backward<BFloat16, Problem::D>(pr.g, qf.data<float>(), kf.data<float>(), vf.data<float>(),
                                         dof.data<float>(), of.data<float>(), fwd[1].data<float>(),
                                         pr.bias.data<float>(), pr.mask.data<bool>(), dq.data<float>(),
                                         dk.data<float>(), dv.data<float>(), ds.data<float>());
  const Tensor* got[] = {&dq, &dk, &dv};
  for (int i = 0; i < 3; ++i) {
    double off = relative_disagreement(*got[i], widened<BFloat16>(cpu[static_cast<size_t>(i)]));
    INFO("gradient " << i << ": " << off << " of the largest");
    CHECK(off <= 2 * 0.0078125);
  }
  double ds_off = relative_disagreement(ds, cpu[3]);
  INFO("dScores " << ds_off);
  CHECK(ds_off <= 1e-5);
}
