#include "optimizers/cuda/cuda_optimizer.h"

#include "optimizers/optimizer_coefficients.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"

namespace ort_train::cuda {
namespace {

class CudaOptimizer final : public Optimizer {
 public:
  CudaOptimizer(OptimizerSettings s, std::vector<ParamSlot> p) : Optimizer(std::move(s), std::move(p)) {}

  Status init() {
    for (const ParamSlot& p : params_)
      if (p.value.device() != DeviceKind::kCuda)
        return invalid_argument("optimizer: parameter '{}' is not on the GPU", p.name);
    auto zeros = [&](Tensor& t) -> Status {
      t = Tensor(DType::kFloat, {total_}, context().allocator->allocate(static_cast<size_t>(total_) * 4));
      if (total_ > 0 && !t.raw()) return make_error(ErrorCode::kInternal, "out of GPU memory for the optimizer state");
      CUDA_RETURN_IF_ERROR(cudaMemsetAsync(t.raw(), 0, t.nbytes(), context().compute));
      return Status::Ok();
    };
    if (s_.name == "Sgd" && s_.momentum != 0) RETURN_IF_ERROR(zeros(m_));
    if (s_.name == "Adam" || s_.name == "AdamW" || s_.name == "Lamb") {
      RETURN_IF_ERROR(zeros(m_));
      RETURN_IF_ERROR(zeros(v_));
    }
    if (s_.name == "Lamb") RETURN_IF_ERROR(zeros(r_));
    // The chunk table, uploaded once: parameters do not move.
    size_t n = params_.size();
    std::vector<float*> ptrs;
    std::vector<float> decay;
    std::vector<int32_t> chunk_param, first_chunk;
    std::vector<int64_t> chunk_begin, chunk_end;
    for (size_t i = 0; i < n; ++i) {
      ptrs.push_back(params_[i].value.data<float>());
      decay.push_back(params_[i].decay ? static_cast<float>(s_.weight_decay) : 0.f);
      first_chunk.push_back(static_cast<int32_t>(chunk_param.size()));
      for (int64_t b = 0; b < params_[i].value.numel(); b += kOptimizerChunk) {
        chunk_param.push_back(static_cast<int32_t>(i));
        chunk_begin.push_back(b);
        chunk_end.push_back(std::min(params_[i].value.numel(), b + kOptimizerChunk));
      }
    }
    first_chunk.push_back(static_cast<int32_t>(chunk_param.size()));
    int64_t chunks = static_cast<int64_t>(chunk_param.size());
    // One buffer: params, grads, offsets, decay, chunk arrays, first_chunk, Lamb partials and ratios.
    size_t bytes = 0;
    auto reserve = [&](size_t b) {
      size_t at = bytes;
      bytes += (b + 15) / 16 * 16;
      return at;
    };
    size_t o_params = reserve(n * sizeof(float*)), o_grads = reserve(n * sizeof(float*));
    size_t o_offsets = reserve(n * sizeof(int64_t)), o_decay = reserve(n * sizeof(float));
    size_t o_cp = reserve(chunks * sizeof(int32_t)), o_cb = reserve(chunks * sizeof(int64_t));
    size_t o_ce = reserve(chunks * sizeof(int64_t)), o_first = reserve((n + 1) * sizeof(int32_t));
    size_t o_partials = reserve(2 * chunks * sizeof(double)), o_ratios = reserve(n * sizeof(double));
    table_storage_ = context().allocator->allocate(bytes);
    if (!table_storage_->data()) return make_error(ErrorCode::kInternal, "out of GPU memory for the optimizer");
    auto* base = static_cast<char*>(table_storage_->data());
    auto upload = [&](size_t at, const void* src, size_t b) -> Status {
      return cuda::upload(base + at, src, b);
    };
    RETURN_IF_ERROR(upload(o_params, ptrs.data(), n * sizeof(float*)));
    RETURN_IF_ERROR(upload(o_offsets, offsets_.data(), n * sizeof(int64_t)));
    RETURN_IF_ERROR(upload(o_decay, decay.data(), n * sizeof(float)));
    RETURN_IF_ERROR(upload(o_cp, chunk_param.data(), chunks * sizeof(int32_t)));
    RETURN_IF_ERROR(upload(o_cb, chunk_begin.data(), chunks * sizeof(int64_t)));
    RETURN_IF_ERROR(upload(o_ce, chunk_end.data(), chunks * sizeof(int64_t)));
    RETURN_IF_ERROR(upload(o_first, first_chunk.data(), (n + 1) * sizeof(int32_t)));
    table_.params = reinterpret_cast<float* const*>(base + o_params);
    grads_ = reinterpret_cast<const float**>(base + o_grads);
    table_.grads = grads_;
    table_.offsets = reinterpret_cast<const int64_t*>(base + o_offsets);
    table_.decay = reinterpret_cast<const float*>(base + o_decay);
    table_.chunk_param = reinterpret_cast<const int32_t*>(base + o_cp);
    table_.chunk_begin = reinterpret_cast<const int64_t*>(base + o_cb);
    table_.chunk_end = reinterpret_cast<const int64_t*>(base + o_ce);
    table_.first_chunk = reinterpret_cast<const int32_t*>(base + o_first);
    table_.chunks = chunks;
    table_.params_count = static_cast<int64_t>(n);
    partials_ = reinterpret_cast<double*>(base + o_partials);
    ratios_ = reinterpret_cast<double*>(base + o_ratios);
    return Status::Ok();
  }

  Status step(const std::vector<Tensor>& grads, double lr, float grad_scale) override {
    RETURN_IF_ERROR(check(grads));
    std::vector<const float*> g;
    for (const Tensor& t : grads) {
      if (t.device() != DeviceKind::kCuda) return invalid_argument("optimizer: gradients must be on the GPU");
      g.push_back(t.data<float>());
    }
    cudaStream_t stream = context().compute;
    RETURN_IF_ERROR(cuda::upload(grads_, g.data(), g.size() * sizeof(float*)));
    ++t_;
    if (s_.name == "Sgd") {
      SgdArgs a{sgd_step(s_, t_, lr, grad_scale), nullptr};
      a.momentum_buffer = m_.defined() ? m_.data<float>() : nullptr;
      CUDA_RETURN_IF_ERROR(launch_sgd(table_, a, stream));
    } else if (s_.name == "Lamb") {
      LambArgs a{};
      a.c = lamb_step(s_, t_, lr, grad_scale);
      a.m = m_.data<float>();
      a.v = v_.data<float>();
      a.r = r_.data<float>();
      a.partials = partials_;
      a.ratios = ratios_;
      CUDA_RETURN_IF_ERROR(launch_lamb(table_, a, stream));
    } else {
      AdamArgs a{};
      a.c = adam_step(s_, t_, lr, grad_scale);
      a.m = m_.data<float>();
      a.v = v_.data<float>();
      CUDA_RETURN_IF_ERROR(launch_adam(table_, a, stream));
    }
    return Status::Ok();
  }

  std::vector<std::pair<std::string, Tensor*>> state() override {
    if (s_.name == "Sgd") {
      if (!m_.defined()) return {};
      return {{"momentum_buffer", &m_}};
    }
    return {{"exp_avg", &m_}, {"exp_avg_sq", &v_}};
  }

 private:
  Tensor m_, v_, r_;
  std::shared_ptr<Storage> table_storage_;
  MultiTensorTable table_;
  const float** grads_ = nullptr;
  double* partials_ = nullptr;
  double* ratios_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<Optimizer>> make_cuda_optimizer(const OptimizerSettings& s, std::vector<ParamSlot> params) {
  RETURN_IF_ERROR(Optimizer::prepare(s, params));
  if (s.name != "Sgd" && s.name != "Adam" && s.name != "AdamW" && s.name != "Lamb")
    return invalid_argument("unknown optimizer '{}' (Sgd, Adam, AdamW, Lamb)", s.name);
  auto opt = std::make_unique<CudaOptimizer>(s, std::move(params));
  RETURN_IF_ERROR(opt->init());
  return std::unique_ptr<Optimizer>(std::move(opt));
}

namespace {
const OptimizerRegistrar kRegistrar(DeviceKind::kCuda, make_cuda_optimizer);
}  // namespace

}  // namespace ort_train::cuda
