// com.ort_train Attention's CPU kernels (both candidates, flash and gemm)
// against a naive reference in double (scores, fill, bias, softmax, product),
// across the flash kernel's query and key blocks, with K as given or
// transposed, grouped-query heads, and dropout; the gemm candidate's gradient
// against the flash candidate's (which the finite-difference cases check);
// and the measured choice between them.
#include <cmath>

#include "numerics/float16.h"
#include "runtime/kernel_choice.h"
#include "test_util.h"

using namespace ort_train;
using namespace ort_train::testing;

namespace {

struct Case {
  int64_t b, h, hk, t, s, d, dv;
  bool k_transposed = false;
  bool bias = false, mask = false;
};

// O and LSE from the definition. K is read in the layout the case says.
std::pair<Tensor, Tensor> reference(const Case& c, const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor* bias, const Tensor* mask, double scale, double fill) {
  Tensor o = Tensor::host(DType::kFloat, {c.b, c.h, c.t, c.dv}), lse = Tensor::host(DType::kFloat, {c.b, c.h, c.t});
  auto Q = q.to_double_vector(), K = k.to_double_vector(), V = v.to_double_vector();
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.h; ++h) {
      int64_t kh = h / (c.h / c.hk);
      for (int64_t t = 0; t < c.t; ++t) {
        std::vector<double> x(static_cast<size_t>(c.s));
        double mx = -INFINITY;
        for (int64_t s = 0; s < c.s; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < c.d; ++d) {
            int64_t ko = (b * c.hk + kh) * c.s * c.d + (c.k_transposed ? d * c.s + s : s * c.d + d);
            dot += Q[static_cast<size_t>(((b * c.h + h) * c.t + t) * c.d + d)] * K[static_cast<size_t>(ko)];
          }
          double xv = scale * dot;
          if (mask && !mask->data<bool>()[t * c.s + s]) xv = fill;  // mask [1, 1, T, S]
          if (bias) xv += bias->data<float>()[b * c.s + s];        // bias [B, 1, 1, S]
          x[static_cast<size_t>(s)] = xv;
          mx = std::max(mx, xv);
        }
        double sum = 0;
        for (double& xv : x) sum += (xv = std::exp(xv - mx));
        lse.data<float>()[(b * c.h + h) * c.t + t] = static_cast<float>(mx + std::log(sum));
        for (int64_t e = 0; e < c.dv; ++e) {
          double acc = 0;
          for (int64_t s = 0; s < c.s; ++s)
            acc += x[static_cast<size_t>(s)] / sum * V[static_cast<size_t>(((b * c.hk + kh) * c.s + s) * c.dv + e)];
          o.data<float>()[((b * c.h + h) * c.t + t) * c.dv + e] = static_cast<float>(acc);
        }
      }
    }
  return {o, lse};
}

NodeSpec spec(const Case& c, uint64_t seed, std::vector<Attribute> attrs, Tensor* bias_out = nullptr,
              Tensor* mask_out = nullptr) {
  Tensor q = random_tensor({c.b, c.h, c.t, c.d}, seed, -2, 2);
  Tensor k = random_tensor(c.k_transposed ? Dims{c.b, c.hk, c.d, c.s} : Dims{c.b, c.hk, c.s, c.d}, seed + 1, -2, 2);
  Tensor v = random_tensor({c.b, c.hk, c.s, c.dv}, seed + 2);
  Tensor bias = c.bias ? random_tensor({c.b, 1, 1, c.s}, seed + 3, -3, 0) : Tensor();
  Tensor mask;
  if (c.mask) {
    mask = Tensor::host(DType::kBool, {1, 1, c.t, c.s});
    for (int64_t t = 0; t < c.t; ++t)
      for (int64_t s = 0; s < c.s; ++s) mask.data<bool>()[t * c.s + s] = s <= t + (c.s - c.t);
  }
  if (bias_out) *bias_out = bias;
  if (mask_out) *mask_out = mask;
  attrs.push_back(Attribute::make_int("k_transposed", c.k_transposed));
  NodeSpec n{.op = "Attention", .inputs = {q, k, v, bias, mask}, .attributes = std::move(attrs), .num_outputs = 2};
  n.domain = kOrtTrainDomain;
  return n;
}

// Runs `n` with every shape of `op` forced to `candidate` (none: measured).
std::vector<Tensor> run_with(const NodeSpec& n, const std::string& candidate) {
  KernelChoices& kc = KernelChoices::instance();
  kc.clear();
  kc.set_deterministic(false);
  if (!candidate.empty()) kc.keep(std::string(kOrtTrainDomain) + "." + n.op, candidate);
  auto out = run_node(n);
  kc.clear();
  return out;
}

// AttentionGrad's node for a forward node `n` with outputs `fwd` and dO.
NodeSpec grad_spec(const NodeSpec& n, const std::vector<Tensor>& fwd, const Tensor& dout, bool bias_grad) {
  NodeSpec g = n;
  g.op = "AttentionGrad";
  g.inputs = {dout, n.inputs[0], n.inputs[1], n.inputs[2], fwd[0], fwd[1], n.inputs[3], n.inputs[4]};
  g.num_outputs = bias_grad ? 4 : 3;
  return g;
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = {
      {1, 2, 2, 5, 7, 4, 3},
      {2, 4, 2, 70, 150, 8, 6, true, true, true},  // several query and key blocks, GQA, K^T, bias, causal mask
      {1, 3, 1, 130, 130, 16, 16, false, false, true},
      {2, 2, 2, 17, 300, 5, 7, false, true, false},
  };
  return cases;
}

}  // namespace

TEST_CASE("Attention matches softmax(scale Q K^T, filled, + bias) V, across blocks and layouts",
          "[kernels][Attention]") {
  for (const std::string candidate : {"flash", "gemm"})
    for (const Case& c : all_cases()) {
      Tensor bias, mask;
      NodeSpec n = spec(c, 7, {Attribute::make_float("scale", 0.35f), Attribute::make_float("mask_fill", -1e9f)},
                        &bias, &mask);
      auto out = run_with(n, candidate);
      auto [o, lse] = reference(c, n.inputs[0], n.inputs[1], n.inputs[2], c.bias ? &bias : nullptr,
                                c.mask ? &mask : nullptr, 0.35, -1e9);
      INFO(candidate << " case T=" << c.t << " S=" << c.s << " heads " << c.h << "/" << c.hk);
      require_close(out[0], o, 1e-4, 1e-5);
      require_close(out[1], lse, 1e-5, 1e-5);
    }
}

TEST_CASE("Attention's gemm candidate gives the flash candidate's gradients, dropout and bias included",
          "[kernels][Attention]") {
  for (float ratio : {0.0f, 0.2f})
    for (const Case& c : all_cases()) {
      NodeSpec n = spec(c, 11, {Attribute::make_float("scale", 0.35f), Attribute::make_float("mask_fill", -1e9f),
                                Attribute::make_float("dropout_ratio", ratio), Attribute::make_int("seed", 3)});
      auto flash_fwd = run_with(n, "flash"), gemm_fwd = run_with(n, "gemm");
      INFO("dropout " << ratio << " case T=" << c.t << " S=" << c.s << " heads " << c.h << "/" << c.hk);
      require_close(gemm_fwd[0], flash_fwd[0], 1e-4, 1e-5);
      require_close(gemm_fwd[1], flash_fwd[1], 1e-5, 1e-5);
      Tensor dout = random_tensor(flash_fwd[0].dims(), 5);
      auto flash = run_with(grad_spec(n, flash_fwd, dout, c.bias), "flash");
      auto gemm = run_with(grad_spec(n, flash_fwd, dout, c.bias), "gemm");
      REQUIRE(gemm.size() == flash.size());
      for (size_t i = 0; i < gemm.size(); ++i) {
        INFO("gradient output " << i);
        require_close(gemm[i], flash[i], 1e-4, 1e-5);
      }
    }
}

TEST_CASE("Attention's measured choice is bit-identical to the candidate it keeps, and pinned to flash under --deterministic",
          "[kernels][Attention][kernel_choice]") {
  KernelChoices& kc = KernelChoices::instance();
  for (const Case& c : {Case{2, 4, 4, 64, 64, 16, 16}, Case{1, 2, 1, 200, 300, 8, 8, false, true, true}}) {
    NodeSpec n = spec(c, 3, {Attribute::make_float("scale", 0.25f), Attribute::make_float("mask_fill", -1e9f)});
    kc.clear();
    auto measured = run_node(n);
    auto chosen = kc.all();
    REQUIRE(chosen.size() == 1);
    std::string name = chosen.begin()->second;
    INFO("chose " << name << " for " << chosen.begin()->first);
    CHECK((name == "flash" || name == "gemm"));
    auto forced = run_with(n, name);
    require_close(measured[0], forced[0], 0, 0);
    require_close(measured[1], forced[1], 0, 0);

    kc.set_deterministic(true);
    auto pinned = run_node(n);
    kc.set_deterministic(false);
    CHECK(kc.all().empty());  // nothing was measured
    auto flash = run_with(n, "flash");
    require_close(pinned[0], flash[0], 0, 0);
  }
  kc.clear();
}

TEST_CASE("Attention's dropout drops about its ratio, is fixed by the seed and changes with the step",
          "[kernels][Attention]") {
  Case c{1, 1, 1, 64, 256, 4, 256};
  // V = identity-like one-hot rows make O the dropped probabilities themselves.
  NodeSpec n = spec(c, 3, {Attribute::make_float("dropout_ratio", 0.25f), Attribute::make_int("seed", 9)});
  Tensor eye = Tensor::host(DType::kFloat, {1, 1, 256, 256});
  for (int64_t i = 0; i < 256; ++i)
    for (int64_t j = 0; j < 256; ++j) eye.data<float>()[i * 256 + j] = i == j ? 1.f : 0.f;
  n.inputs[2] = eye;
  auto a = run_node(n), b = run_node(n);
  require_close(a[0], b[0], 0, 0);
  int64_t zeros = 0, total = a[0].numel();
  for (int64_t i = 0; i < total; ++i) zeros += a[0].data<float>()[i] == 0.f;
  CHECK(static_cast<double>(zeros) / static_cast<double>(total) == Approx(0.25).margin(0.02));
  n.run_options.step = 1;
  auto later = run_node(n);
  int64_t differ = 0;
  for (int64_t i = 0; i < total; ++i) differ += (a[0].data<float>()[i] == 0.f) != (later[0].data<float>()[i] == 0.f);
  CHECK(differ > total / 10);
}

TEST_CASE("Attention refuses operands that do not fit together", "[kernels][Attention]") {
  Case c{1, 3, 2, 4, 4, 2, 2};  // 3 heads on 2 key/value heads
  NodeSpec n = spec(c, 1, {});
  Status s = run_node_error(n);
  CHECK_THAT(s.message(), Catch::Contains("multiple of Hk"));
}

namespace {

// The 16-bit kernel against the float32 gemm candidate on the widened
// operands: the same scores (LSE bit for bit), the product within the two
// roundings (P, then O) of the 16-bit type; the gradients likewise.
template <typename H>
void check_half_attention(DType half, double rtol) {
  for (const Case& c : all_cases()) {
    NodeSpec wide = spec(c, 17, {Attribute::make_float("scale", 0.35f), Attribute::make_float("mask_fill", -1e9f)});
    NodeSpec low = wide;
    for (size_t i = 0; i < 3; ++i) {
      low.inputs[i] = narrowed<H>(wide.inputs[i]);
      wide.inputs[i] = widened<H>(low.inputs[i]);
    }
    INFO(dtype_name(half) << " case T=" << c.t << " S=" << c.s << " heads " << c.h << "/" << c.hk);
    auto ref = run_with(wide, "gemm");
    auto got = run_node(low);
    REQUIRE(got[0].dtype() == half);
    REQUIRE(got[1].dtype() == DType::kFloat);
    require_close(got[1], ref[1], 0, 0);
    require_close(widened<H>(got[0]), ref[0], rtol, rtol);
    Tensor dout = narrowed<H>(random_tensor(ref[0].dims(), 19));
    auto ref_grads = run_with(grad_spec(wide, ref, widened<H>(dout), c.bias), "gemm");
    auto grads = run_node(grad_spec(low, got, dout, c.bias));
    REQUIRE(grads.size() == ref_grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      INFO("gradient output " << i);
      Tensor g = i < 3 ? widened<H>(grads[i]) : grads[i];  // dScores is float32
      require_close(g, ref_grads[i], 4 * rtol, 4 * rtol);
    }
  }
}

}  // namespace

TEST_CASE("Attention in 16 bits: float32 scores and softmax, the probabilities rounded for the product with V",
          "[kernels][Attention][half]") {
  check_half_attention<BFloat16>(DType::kBFloat16, 1.6e-2);
  check_half_attention<Float16>(DType::kFloat16, 2e-3);
}
