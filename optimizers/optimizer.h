// Optimizers update the trainable initializers in place from their gradients
// (spec section 2: exactly torch.optim.SGD, Adam, AdamW; Hugging Face's AdamW
// in `huggingface` mode; LAMB as ONNX Runtime's LambOptimizer). Optimizer
// state lives in one flat contiguous buffer per kind (every parameter's
// exp_avg back to back, ...), and each step is one fused multi-tensor pass:
// a parallel loop over fixed-size chunks of all parameters together, not a
// loop of small ops per parameter.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "configs/model_description.h"
#include "graph/tensor.h"

namespace ort_train {

struct ParamSlot {
  std::string name;
  Tensor value;          // the initializer itself: updated in place
  bool decay = true;     // weight decay applies (not matched by no_decay)
  // --precision: 16-bit copies of the value the graph reads, rounded from it
  // by the CPU optimizers chunk by chunk right after each chunk's update.
  std::vector<Tensor> low;
};

// Resolved settings: the description's values or each optimizer's PyTorch default.
struct OptimizerSettings {
  std::string name = "Adam";  // Sgd | Adam | AdamW | Lamb
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double momentum = 0.0;
  bool huggingface = false;
  std::optional<double> max_grad_norm;
  std::optional<double> ratio_min, ratio_max;
  std::vector<std::string> no_decay;
};

// Applies defaults: eps 1e-8 (1e-6 for Lamb), weight_decay 0 (0.01 for AdamW, as torch).
OptimizerSettings resolve_optimizer_settings(const OptimizerConfig& config);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update with learning rate `lr`; grads[i] belongs to params[i]
  // (float32), read once and multiplied by `grad_scale` there (the step's
  // unscale, average and clip in one factor: numerics/optimizer_math.h).
  virtual Status step(const std::vector<Tensor>& grads, double lr, float grad_scale) = 0;
  int64_t steps_taken() const { return t_; }
  // For resuming from a checkpoint (state buffers are restored through state()).
  void set_steps_taken(int64_t t) { t_ = t; }
  const std::vector<ParamSlot>& params() const { return params_; }
  // Named flat state buffers ("exp_avg", "exp_avg_sq", "momentum_buffer"), for checkpoints.
  virtual std::vector<std::pair<std::string, Tensor*>> state() = 0;
  // ZeRO-1: a slot may be part of a tensor whose other parts other ranks
  // update. LAMB's trust ratio needs the whole tensor's ||w||² and ||r||²:
  // it hands its per-slot partial sums to this hook, which replaces them with
  // the tensor's totals over the ranks.
  using NormReducer = std::function<Status(std::vector<double>& w_sq, std::vector<double>& r_sq)>;
  void set_norm_reducer(NormReducer f) { norm_reducer_ = std::move(f); }

  // The fused CPU optimizer (make_optimizer picks the one of the parameters' device).
  static Result<std::unique_ptr<Optimizer>> create(const OptimizerSettings& s, std::vector<ParamSlot> params);
  // Checks that every parameter is float32 and marks those matched by no_decay
  // (shared by the CPU and GPU optimizers).
  static Status prepare(const OptimizerSettings& s, std::vector<ParamSlot>& params);

 protected:
  Optimizer(OptimizerSettings s, std::vector<ParamSlot> params);
  // Calls fn(param index, begin, end) over chunks of every parameter, in
  // parallel; when fn updates the weights, each chunk's 16-bit copies
  // (ParamSlot::low) are rounded from it right after, while it is in cache.
  template <typename F>
  void for_each_chunk(F&& fn, bool updates_weights = true) const;
  Status check(const std::vector<Tensor>& grads) const;

  OptimizerSettings s_;
  std::vector<ParamSlot> params_;
  std::vector<int64_t> offsets_;  // start of each parameter in the flat state
  int64_t total_ = 0;
  int64_t t_ = 0;
  NormReducer norm_reducer_;
};

// One optimizer implementation per device kind, registered beside it (the
// CPU's in optimizer.cc, the GPU's in optimizers/cuda/), so the runtime's
// Device knows nothing of optimizers.
using OptimizerFactory =
    std::function<Result<std::unique_ptr<Optimizer>>(const OptimizerSettings&, std::vector<ParamSlot>)>;
struct OptimizerRegistrar {
  OptimizerRegistrar(DeviceKind device, OptimizerFactory factory);
};
// An optimizer whose state lives on `device` and that updates the parameters in place.
Result<std::unique_ptr<Optimizer>> make_optimizer(DeviceKind device, const OptimizerSettings& s,
                                                  std::vector<ParamSlot> params);

}  // namespace ort_train
