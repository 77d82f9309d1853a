#include "optimizers/optimizer.h"


#include <cmath>
#include <array>
#include <cstring>
#include <map>

#include "graph/glob.h"
#include "optimizers/optimizer_coefficients.h"
#include "runtime/cpu/half_convert.h"
#include "runtime/cpu/parallel.h"
#include "runtime/cpu/simd_clones.h"

namespace ort_train {
namespace {

constexpr int64_t kChunk = 65536;  // elements per task of the fused update

}  // namespace

OptimizerSettings resolve_optimizer_settings(const OptimizerConfig& c) {
  OptimizerSettings s;
  if (!c.name.empty()) s.name = c.name;
  s.lr = c.lr.value_or(1e-3);
  if (c.betas) {
    s.beta1 = c.betas->first;
    s.beta2 = c.betas->second;
  }
  s.eps = c.eps.value_or(s.name == "Lamb" ? 1e-6 : 1e-8);
  s.weight_decay = c.weight_decay.value_or(s.name == "AdamW" ? 0.01 : 0.0);
  s.momentum = c.momentum.value_or(0.0);
  s.huggingface = c.mode == "huggingface";
  s.max_grad_norm = c.max_grad_norm;
  s.ratio_min = c.ratio_min;
  s.ratio_max = c.ratio_max;
  s.no_decay = c.no_decay;
  return s;
}

namespace {

// low[b, e) = value[b, e) rounded to low's 16-bit type (nearest even).
void round_into(const Tensor& value, const Tensor& low, int64_t b, int64_t e) {
  const float* w = value.data<float>();
  if (low.dtype() == DType::kBFloat16) {
    float_to_bfloat16(w + b, low.data<BFloat16>() + b, e - b);
  } else {
    Float16* out = low.data<Float16>();
    for (int64_t k = b; k < e; ++k) out[k] = Float16(w[k]);
  }
}

}  // namespace

Optimizer::Optimizer(OptimizerSettings s, std::vector<ParamSlot> params) : s_(std::move(s)), params_(std::move(params)) {
  for (const ParamSlot& p : params_) {
    offsets_.push_back(total_);
    total_ += p.value.numel();
  }
}

template <typename F>
void Optimizer::for_each_chunk(F&& fn, bool updates_weights) const {
  std::vector<std::array<int64_t, 3>> tasks;  // (param, begin, end)
  for (size_t i = 0; i < params_.size(); ++i)
    for (int64_t b = 0; b < params_[i].value.numel(); b += kChunk)
      tasks.push_back({static_cast<int64_t>(i), b, std::min(params_[i].value.numel(), b + kChunk)});
  parallel_for(static_cast<int64_t>(tasks.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      size_t i = static_cast<size_t>(tasks[t][0]);
      fn(i, tasks[t][1], tasks[t][2]);
      if (updates_weights)
        for (const Tensor& low : params_[i].low) round_into(params_[i].value, low, tasks[t][1], tasks[t][2]);
    }
  });
}

Status Optimizer::check(const std::vector<Tensor>& grads) const {
  if (grads.size() != params_.size())
    return invalid_argument("optimizer: {} gradients for {} parameters", grads.size(), params_.size());
  for (size_t i = 0; i < grads.size(); ++i)
    if (grads[i].dims() != params_[i].value.dims() || grads[i].dtype() != DType::kFloat ||
        params_[i].value.dtype() != DType::kFloat)
      return invalid_argument("optimizer: gradient of '{}' does not match the parameter (float32, same shape)",
                              params_[i].name);
  return Status::Ok();
}

namespace {

Tensor zeros(int64_t n) {
  Tensor t = Tensor::host(DType::kFloat, {n});
  std::memset(t.raw(), 0, t.nbytes());
  return t;
}

// torch.optim.SGD (numerics/optimizer_math.h).
class Sgd final : public Optimizer {
 public:
  Sgd(OptimizerSettings s, std::vector<ParamSlot> p) : Optimizer(std::move(s), std::move(p)) {
    if (s_.momentum != 0) buf_ = zeros(total_);
  }
  Status step(const std::vector<Tensor>& grads, double lr, float grad_scale) override {
    RETURN_IF_ERROR(check(grads));
    ++t_;
    const SgdStep c = sgd_step(s_, t_, lr, grad_scale);
    for_each_chunk([&](size_t i, int64_t b, int64_t e) {
      float* w = params_[i].value.data<float>();
      const float* g = grads[i].data<float>();
      float wd = params_[i].decay ? static_cast<float>(s_.weight_decay) : 0.f;
      float* m = buf_.defined() ? buf_.data<float>() + offsets_[i] : nullptr;
      for (int64_t k = b; k < e; ++k) sgd_element(w[k], g[k], m ? m + k : nullptr, wd, c);
    });
    return Status::Ok();
  }
  std::vector<std::pair<std::string, Tensor*>> state() override {
    if (!buf_.defined()) return {};
    return {{"momentum_buffer", &buf_}};
  }

 private:
  Tensor buf_;
};

// One chunk of torch's Adam/AdamW update, at the CPU's widest vectors
// (runtime/cpu/simd_clones.h: the same IEEE operations in every clone).
ORT_TRAIN_SIMD_CLONES void adam_update(float* __restrict w, float* __restrict m, float* __restrict v,
                                       const float* __restrict g, int64_t n, AdamStep c, AdamDecay d) {
  for (int64_t k = 0; k < n; ++k) adam_element(w[k], g[k], m[k], v[k], c, d);
}

// torch.optim.Adam / AdamW, or transformers.AdamW in huggingface mode
// (numerics/optimizer_math.h).
class Adam final : public Optimizer {
 public:
  Adam(OptimizerSettings s, std::vector<ParamSlot> p)
      : Optimizer(std::move(s), std::move(p)), m_(zeros(total_)), v_(zeros(total_)) {}
  Status step(const std::vector<Tensor>& grads, double lr, float grad_scale) override {
    RETURN_IF_ERROR(check(grads));
    ++t_;
    const AdamStep c = adam_step(s_, t_, lr, grad_scale);
    for_each_chunk([&](size_t i, int64_t b, int64_t e) {
      float* w = params_[i].value.data<float>();
      const float* g = grads[i].data<float>();
      float* m = m_.data<float>() + offsets_[i];
      float* v = v_.data<float>() + offsets_[i];
      const float wd = params_[i].decay ? static_cast<float>(s_.weight_decay) : 0.f;
      if (c.huggingface) {
        for (int64_t k = b; k < e; ++k) adam_huggingface_element(w[k], g[k], m[k], v[k], wd, c);
        return;
      }
      adam_update(w + b, m + b, v + b, g + b, e - b, c, adam_decay(c, wd));
    });
    return Status::Ok();
  }
  std::vector<std::pair<std::string, Tensor*>> state() override { return {{"exp_avg", &m_}, {"exp_avg_sq", &v_}}; }

 private:
  Tensor m_, v_;
};

// LAMB (numerics/optimizer_math.h). Two passes: moments and the direction r
// (kept in a scratch buffer) with per-chunk norm partials, then the update
// with each tensor's trust ratio.
class Lamb final : public Optimizer {
 public:
  Lamb(OptimizerSettings s, std::vector<ParamSlot> p)
      : Optimizer(std::move(s), std::move(p)), m_(zeros(total_)), v_(zeros(total_)), r_(zeros(total_)) {}
  Status step(const std::vector<Tensor>& grads, double lr, float grad_scale) override {
    RETURN_IF_ERROR(check(grads));
    ++t_;
    const LambStep c = lamb_step(s_, t_, lr, grad_scale);
    size_t n = params_.size();
    // Per-chunk partial sums, added in chunk order afterwards: the same norms
    // for any thread count and schedule (a shared sum under a lock was not).
    std::vector<std::vector<double>> w_parts(n), r_parts(n);
    for (size_t i = 0; i < n; ++i) {
      size_t chunks = static_cast<size_t>((params_[i].value.numel() + kChunk - 1) / kChunk);
      w_parts[i].assign(chunks, 0.0);
      r_parts[i].assign(chunks, 0.0);
    }
    for_each_chunk([&](size_t i, int64_t b, int64_t e) {
      const float* w = params_[i].value.data<float>();
      const float* g = grads[i].data<float>();
      float* m = m_.data<float>() + offsets_[i];
      float* v = v_.data<float>() + offsets_[i];
      float* r = r_.data<float>() + offsets_[i];
      const double wd = params_[i].decay ? s_.weight_decay : 0.0;
      double ws = 0, rs = 0;
      for (int64_t k = b; k < e; ++k) {
        double rk = lamb_direction(w[k], g[k], m[k], v[k], wd, c);
        r[k] = static_cast<float>(rk);
        ws += static_cast<double>(w[k]) * w[k];
        rs += rk * rk;
      }
      w_parts[i][static_cast<size_t>(b / kChunk)] = ws;
      r_parts[i][static_cast<size_t>(b / kChunk)] = rs;
    }, false);  // the moments pass: the weights change in the second
    std::vector<double> w_sq(n, 0.0), r_sq(n, 0.0);
    for (size_t i = 0; i < n; ++i)
      for (size_t k = 0; k < w_parts[i].size(); ++k) {
        w_sq[i] += w_parts[i][k];
        r_sq[i] += r_parts[i][k];
      }
    if (norm_reducer_) RETURN_IF_ERROR(norm_reducer_(w_sq, r_sq));  // ZeRO-1: whole tensors' norms
    for_each_chunk([&](size_t i, int64_t b, int64_t e) {
      float* w = params_[i].value.data<float>();
      const float* r = r_.data<float>() + offsets_[i];
      const float step = static_cast<float>(lr * lamb_ratio(w_sq[i], r_sq[i], c));
      for (int64_t k = b; k < e; ++k) w[k] -= step * r[k];
    });
    return Status::Ok();
  }
  std::vector<std::pair<std::string, Tensor*>> state() override { return {{"exp_avg", &m_}, {"exp_avg_sq", &v_}}; }

 private:
  Tensor m_, v_, r_;
};

}  // namespace

Status Optimizer::prepare(const OptimizerSettings& s, std::vector<ParamSlot>& params) {
  for (ParamSlot& p : params) {
    if (p.value.dtype() != DType::kFloat)
      return unsupported("optimizer: parameter '{}' is {}; only float32 parameters train", p.name,
                         dtype_name(p.value.dtype()));
    for (const Tensor& low : p.low)
      if (!dtype_is_half(low.dtype()) || low.numel() != p.value.numel())
        return invalid_argument("optimizer: a 16-bit copy of '{}' is {} {}", p.name, dtype_name(low.dtype()),
                                dims_to_string(low.dims()));
    for (const std::string& glob : s.no_decay)
      if (glob_match(glob, p.name)) p.decay = false;
  }
  return Status::Ok();
}

Result<std::unique_ptr<Optimizer>> Optimizer::create(const OptimizerSettings& s, std::vector<ParamSlot> params) {
  RETURN_IF_ERROR(prepare(s, params));
  if (s.name == "Sgd") return std::unique_ptr<Optimizer>(new Sgd(s, std::move(params)));
  if (s.name == "Adam" || s.name == "AdamW") return std::unique_ptr<Optimizer>(new Adam(s, std::move(params)));
  if (s.name == "Lamb") return std::unique_ptr<Optimizer>(new Lamb(s, std::move(params)));
  return invalid_argument("unknown optimizer '{}' (Sgd, Adam, AdamW, Lamb)", s.name);
}

namespace {

std::map<DeviceKind, OptimizerFactory>& factories() {
  static std::map<DeviceKind, OptimizerFactory> f;
  return f;
}

const OptimizerRegistrar kCpuRegistrar(DeviceKind::kCpu, Optimizer::create);

}  // namespace

OptimizerRegistrar::OptimizerRegistrar(DeviceKind device, OptimizerFactory factory) {
  factories()[device] = std::move(factory);
}

Result<std::unique_ptr<Optimizer>> make_optimizer(DeviceKind device, const OptimizerSettings& s,
                                                  std::vector<ParamSlot> params) {
  auto it = factories().find(device);
  if (it == factories().end())
    return unsupported("no optimizer is registered for device {}", device == DeviceKind::kCpu ? "cpu" : "cuda");
  return it->second(s, std::move(params));
}

}  // namespace ort_train
