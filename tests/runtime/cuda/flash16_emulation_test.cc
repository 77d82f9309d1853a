// The flash attention kernel's algorithm (cuda_kernels/attention_flash16.cu)
// replayed on the host, lane by lane, through the same tile maps
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
#include "numerics/float16.h"
#include "runtime/kernel_choice.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

constexpr int kWarps = 4, kRows = 16 * kWarps, kKeys = 64;

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

// O (rounded to H, as float) and LSE for one (b, h) of 16-bit-valued float
// Q [T, D], K [S, D], V [S, D] with attention_score's mask and bias.
template <typename H, int D>
void emulate(const AttentionGeometry& g, int64_t b, int64_t h, const float* q, const float* k, const float* v,
             const float* bias, const bool* mask, float* out, float* lse) {
  const int64_t T = g.queries, S = g.keys;
  for (int64_t block = 0; block * kRows < T; ++block)
    for (int warp = 0; warp < kWarps; ++warp) {
      const int64_t t0 = block * kRows + warp * 16;
      float o[32][D / 8][4] = {};
      float m[32][2], l[32][2];
      for (int lane = 0; lane < 32; ++lane) m[lane][0] = m[lane][1] = -INFINITY, l[lane][0] = l[lane][1] = 0;
      for (int64_t s0 = 0; s0 < S; s0 += kKeys) {
        float sc[32][kKeys / 8][4] = {};
        for (int nb = 0; nb < kKeys / 8; ++nb) {
          float c[32][4] = {};
          for (int kk = 0; kk < D / 16; ++kk) {
            WarpTiles w;
            for (int lane = 0; lane < 32; ++lane) {
              for (int i = 0; i < 8; ++i) {
                MmaIndex at = mma_a_index(lane, i);
                int64_t t = t0 + at.row;
                w.a[lane][i] = t < T ? q[t * D + kk * 16 + at.col] : 0.f;
              }
              for (int i = 0; i < 4; ++i) {
                MmaIndex bt = mma_b_index(lane, i);
                int64_t s = s0 + nb * 8 + bt.col;
                w.b[lane][i] = s < S ? k[s * D + kk * 16 + bt.row] : 0.f;
              }
            }
            w.mma(c);
          }
          for (int lane = 0; lane < 32; ++lane)
            for (int i = 0; i < 4; ++i) sc[lane][nb][i] = c[lane][i];
        }
        float tile_max[32][2];
        for (int lane = 0; lane < 32; ++lane) {
          tile_max[lane][0] = tile_max[lane][1] = -INFINITY;
          for (int nb = 0; nb < kKeys / 8; ++nb)
            for (int i = 0; i < 4; ++i) {
              MmaIndex at = mma_c_index(lane, i);
              int64_t t = t0 + at.row, s = s0 + nb * 8 + at.col;
              float x = s < S && t < T ? attention_score<float>(g, static_cast<float>(g.scale) * sc[lane][nb][i],
                                                                 bias, mask, b, h, t, s)
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
            auto row_shift = [](float mx) { return std::isinf(mx) ? 0.f : mx; };
            float factor = std::exp(row_shift(m[lane][r]) - row_shift(grown));
            m[lane][r] = grown;
            shift[lane][r] = row_shift(grown);
            l[lane][r] *= factor;
            for (int nd = 0; nd < D / 8; ++nd) o[lane][nd][2 * r] *= factor, o[lane][nd][2 * r + 1] *= factor;
          }
        for (int j = 0; j < kKeys / 16; ++j)
          for (int nd = 0; nd < D / 8; ++nd) {
            WarpTiles w;
            for (int lane = 0; lane < 32; ++lane) {
              for (int i = 0; i < 8; ++i) {
                int tile = 2 * j + mma_a_from_c_tile(i), cv = mma_a_from_c_value(i);
                float p = std::exp(sc[lane][tile][cv] - shift[lane][cv >> 1]);
                if (nd == 0) l[lane][cv >> 1] += p;
                w.a[lane][i] = rounded<H>(p);
              }
              for (int i = 0; i < 4; ++i) {
                MmaIndex bt = mma_b_index(lane, i);
                int64_t s = s0 + j * 16 + bt.row;
                w.b[lane][i] = s < S ? v[s * D + nd * 8 + bt.col] : 0.f;
              }
            }
            float c[32][4];
            for (int lane = 0; lane < 32; ++lane)
              for (int i = 0; i < 4; ++i) c[lane][i] = o[lane][nd][i];
            w.mma(c);
            for (int lane = 0; lane < 32; ++lane)
              for (int i = 0; i < 4; ++i) o[lane][nd][i] = c[lane][i];
          }
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
            if (t < T) out[t * D + nd * 8 + at.col] = rounded<H>(o[lane][nd][i] / sum[i >> 1]);
          }
        if ((lane & 3) == 0)
          for (int r = 0; r < 2; ++r) {
            int64_t t = t0 + (lane >> 2) + 8 * r;
            if (t < T) lse[t] = (std::isinf(m[lane][r]) ? 0.f : m[lane][r]) + std::log(sum[r]);
          }
      }
    }
}

}  // namespace

TEST_CASE("flash attention's algorithm, replayed lane by lane, agrees with the 16-bit attention of the CPU",
          "[cuda][mma]") {
  constexpr int D = 64;
  const int64_t T = 70, S = 100;
  Tensor q = narrowed<BFloat16>(random_tensor({1, 1, T, D}, 61, -2, 2));
  Tensor k = narrowed<BFloat16>(random_tensor({1, 1, S, D}, 62, -2, 2));
  Tensor v = narrowed<BFloat16>(random_tensor({1, 1, S, D}, 63));
  Tensor bias = random_tensor({1, 1, 1, S}, 64, -3, 0);
  Tensor mask = Tensor::host(DType::kBool, {1, 1, T, S});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < S; ++s) mask.data<bool>()[t * S + s] = s <= t + (S - T);
  NodeSpec fwd{"Attention", {q, k, v, bias, mask},
               {Attribute::make_float("scale", 0.125f), Attribute::make_float("mask_fill", -1e9f)}, 2, 1, {},
               kOrtTrainDomain};
  auto cpu = run_node(fwd);
  AttentionGeometry g;
  g.batch = g.heads = g.kv_heads = 1;
  g.queries = T;
  g.keys = S;
  g.head_size = g.value_size = D;
  g.scale = 0.125;
  g.bias_stride[3] = 1;
  g.mask_stride[2] = S;
  g.mask_stride[3] = 1;
  g.mask_fill = -1e9;
  REQUIRE(attention_flash16_supports(g));
  Tensor qf = widened<BFloat16>(q), kf = widened<BFloat16>(k), vf = widened<BFloat16>(v);
  Tensor out = Tensor::host(DType::kFloat, {1, 1, T, D}), lse = Tensor::host(DType::kFloat, {1, 1, T});
  emulate<BFloat16, D>(g, 0, 0, qf.data<float>(), kf.data<float>(), vf.data<float>(), bias.data<float>(),
                       mask.data<bool>(), out.data<float>(), lse.data<float>());
  double o_off = relative_disagreement(out, widened<BFloat16>(cpu[0]));
  double lse_off = relative_disagreement(lse, cpu[1]);
  INFO("O " << o_off << " of the largest, LSE " << lse_off);
  CHECK(o_off <= 2 * 0.0078125);  // two bfloat16 units: P rounded before, O after normalizing
  CHECK(lse_off <= 1e-5);
  CHECK(o_off <= kKernelChoiceAgreement);
}
