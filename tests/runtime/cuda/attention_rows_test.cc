// The row arithmetic of the CUDA "cublas" attention candidate
// (cuda_kernels/attention_rows.h), run on the host as the GPU runs it: each
// row split over a warp's 32 lanes, partial maxima and sums combined in the
// warp's butterfly order, against the same functions on one lane (the CPU
// "gemm" candidate, which tests/runtime/kernels/attention_test.cc checks
// against the definition). Rows shorter than a warp, masked rows, a fully
// masked row and dropout included.
#include <cmath>
#include <vector>

#include "cuda_kernels/attention_rows.h"
#include "test_util.h"

using namespace ort_train;

namespace {

constexpr int kLanes = 32;

// The warp's __shfl_xor_sync butterfly: after it every lane holds the same combination.
template <typename F>
std::vector<float> butterfly(std::vector<float> v, F combine) {
  for (int o = kLanes / 2; o > 0; o >>= 1) {
    std::vector<float> next(v);
    for (int l = 0; l < kLanes; ++l) next[static_cast<size_t>(l)] = combine(v[static_cast<size_t>(l)], v[static_cast<size_t>(l ^ o)]);
    v = next;
  }
  return v;
}

struct RowResult {
  std::vector<float> x;
  float lse;
};

RowResult forward_row(const AttentionGeometry& g, const float* bias, const bool* mask, int64_t row,
                      std::vector<float> x, int lanes) {
  std::vector<float> part(kLanes, -INFINITY);
  for (int l = 0; l < lanes; ++l)
    part[static_cast<size_t>(l)] = attention_row_scores<float>(g, bias, mask, row, x.data(), l, lanes);
  float mx = lanes == 1 ? part[0] : butterfly(part, [](float a, float b) { return std::fmax(a, b); })[0];
  float shift = attention_row_shift(mx);
  std::vector<float> sums(kLanes, 0.f);
  for (int l = 0; l < lanes; ++l)
    sums[static_cast<size_t>(l)] = attention_row_exp<float>(g, x.data(), shift, l, lanes);
  float sum = lanes == 1 ? sums[0] : butterfly(sums, [](float a, float b) { return a + b; })[0];
  for (int l = 0; l < lanes; ++l) attention_row_probs<float>(g, row, x.data(), sum, l, lanes);
  return {x, attention_row_lse(shift, sum)};
}

}  // namespace

TEST_CASE("attention_rows: a warp's 32 lanes give one lane's probabilities, LSE and score gradients",
          "[cuda][attention]") {
  for (int64_t keys : {7, 32, 45, 300}) {
    AttentionGeometry g;
    g.batch = 2;
    g.heads = 2;
    g.kv_heads = 1;
    g.queries = 3;
    g.keys = keys;
    g.head_size = 4;
    g.value_size = 4;
    g.mask_fill = -INFINITY;
    g.dropout_ratio = 0.25f;
    g.seed = 77;
    g.bias_stride[0] = keys;  // bias [B, 1, 1, S]
    g.bias_stride[3] = 1;
    g.mask_stride[2] = keys;  // mask [1, 1, T, S]
    g.mask_stride[3] = 1;
    std::vector<float> bias(static_cast<size_t>(2 * keys));
    for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(std::sin(0.3 * static_cast<double>(i)));
    std::vector<char> maskc(static_cast<size_t>(3 * keys));
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t s = 0; s < keys; ++s) maskc[static_cast<size_t>(t * keys + s)] = t > 0 && s <= t * keys / 3;
    // Row t = 0 is masked everywhere: its LSE is -inf, its probabilities NaN, its gradient 0.
    const bool* mask = reinterpret_cast<const bool*>(maskc.data());
    for (int64_t row = 0; row < g.batch * g.heads * g.queries; ++row) {
      std::vector<float> x(static_cast<size_t>(keys)), y(static_cast<size_t>(keys));
      for (int64_t s = 0; s < keys; ++s) {
        x[static_cast<size_t>(s)] = static_cast<float>(std::cos(0.7 * static_cast<double>(row * 31 + s)) * 3);
        y[static_cast<size_t>(s)] = static_cast<float>(std::sin(0.2 * static_cast<double>(row * 17 + s)));
      }
      INFO("keys " << keys << " row " << row);
      RowResult one = forward_row(g, bias.data(), mask, row, x, 1);
      RowResult warp = forward_row(g, bias.data(), mask, row, x, kLanes);
      bool empty = row % 3 == 0;
      CHECK(std::isinf(one.lse) == empty);
      if (!empty) CHECK(warp.lse == Approx(one.lse).epsilon(1e-6));
      for (size_t s = 0; s < x.size(); ++s) {
        if (empty) {
          CHECK(std::isnan(warp.x[s]));
          continue;
        }
        CHECK(warp.x[s] == Approx(one.x[s]).epsilon(1e-5).margin(1e-7));
      }
      // Backward: the lane split has no reduction inside, so it is exact.
      float lse = one.lse, dot = 0.37f;
      std::vector<float> x1 = x, y1 = y, d1(x.size()), xw = x, yw = y, dw(x.size());
      attention_row_grad<float>(g, bias.data(), mask, row, lse, dot, x1.data(), y1.data(), d1.data(), 0, 1);
      for (int l = 0; l < kLanes; ++l)
        attention_row_grad<float>(g, bias.data(), mask, row, lse, dot, xw.data(), yw.data(), dw.data(), l, kLanes);
      for (size_t s = 0; s < x.size(); ++s) {
        CHECK(xw[s] == x1[s]);
        CHECK(yw[s] == y1[s]);
        CHECK(dw[s] == d1[s]);
        if (empty) CHECK(yw[s] == 0.f);
      }
    }
  }
}

TEST_CASE("attention_rows: the row dot is dO . O over a lane's components", "[cuda][attention]") {
  std::vector<float> a{1, 2, 3, 4, 5}, b{2, 2, 2, 2, 2};
  float total = 0;
  for (int l = 0; l < 3; ++l) total += attention_row_dot(a.data(), b.data(), 5, l, 3);
  CHECK(total == 30.f);
}
