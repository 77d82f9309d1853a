#include "training/trainer.h"

#include "training/index_bounds.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "graph/reachability.h"
#include "optimizers/schedule.h"
#include "runtime/parameter_store.h"
#include "runtime/vector_ops.h"
#include "training/step_graph.h"
#include "training/step_metrics.h"

namespace ort_train {

Result<std::unique_ptr<Trainer>> Trainer::create(TrainingGraph tg, TrainerOptions options, BatchSource source) {
  ASSIGN_OR_RETURN(StepGraph step, build_step_graph(tg));
  return create(std::move(tg), std::move(step), std::move(options), std::move(source));
}

Result<std::unique_ptr<Trainer>> Trainer::create(TrainingGraph tg, StepGraph step, TrainerOptions options,
                                                 BatchSource source) {
  std::unique_ptr<Trainer> t(new Trainer());
  t->tg_ = std::move(tg);
  t->options_ = std::move(options);
  t->source_ = std::move(source);
  if (t->options_.grad_accum < 1) return invalid_argument("grad_accum must be at least 1");
  if (t->options_.zero_stage < 0 || t->options_.zero_stage > 2)
    return invalid_argument("--zero {}: stages 0, 1 and 2 exist", t->options_.zero_stage);  // on one rank too, where ZeRO does nothing
  t->device_ = t->options_.device;
  if (!t->device_) {
    ASSIGN_OR_RETURN(t->device_, get_device(DeviceKind::kCpu));
  }
  ASSIGN_OR_RETURN(t->math_, vector_ops(t->device_->kind()));
  if (t->options_.communicator && t->options_.communicator->size() > 1) {
    t->rank_ = t->options_.communicator->rank();
    t->world_ = t->options_.communicator->size();
  }
  // Every micro-batch of the job has an int64 index (source_index); a run
  // that cannot count them would wrap (2^62 leaves room for a resume's base).
  int64_t per_step = 0, total = 0;
  if (__builtin_mul_overflow(t->options_.grad_accum, int64_t{t->world_}, &per_step) ||
      __builtin_mul_overflow(std::max<int64_t>(t->options_.steps, 1), per_step, &total) || total > (int64_t{1} << 62))
    return invalid_argument("{} steps of {} micro-batches on {} rank(s) are more micro-batches than a run can count "
                            "(2^62)",
                            t->options_.steps, t->options_.grad_accum, t->world_);
  RETURN_IF_ERROR(t->make_store());
  RETURN_IF_ERROR(t->make_executor(std::move(step)));
  RETURN_IF_ERROR(t->make_optimizer());
  if (t->world_ > 1) {
    ReducerOptions reducer;
    reducer.bucket_bytes = t->options_.bucket_bytes;
    reducer.wire = t->options_.allreduce_dtype;
    reducer.zero = t->zero_.get();
    ASSIGN_OR_RETURN(t->reducer_, GradientReducer::create(*t->store_, t->tg_.gradients, *t->executor_,
                                                          t->options_.communicator, t->device_, reducer));
  }
  if (!t->tg_.loss_scale_input.empty()) t->scaler_.emplace(t->options_.loss_scale);
  return t;
}

// The parameter store: trainable tensors become views into one flat buffer
// per dtype on the device, gradients views into another. The graph's
// initializers are replaced by the views (the executors read them); the
// originals, which the caller's forward model shares, get the trained values
// back in sync_to_host.
Status Trainer::make_store() {
  Graph& g = tg_.model.graph;
  std::vector<std::pair<std::string, Tensor>> values;
  for (const std::string& w : tg_.gradients.trainable) {
    const Tensor& v = g.initializers.at(w);
    if (!dtype_is_float(v.dtype()))
      return invalid_argument("trainable '{}' has dtype {}; only floating-point tensors train", w, dtype_name(v.dtype()));
    values.emplace_back(w, v);
    originals_[w] = v;
  }
  // ZeRO-2 keeps no whole gradient: each rank's share has its own buffer (make_optimizer).
  ASSIGN_OR_RETURN(store_, ParameterStore::create(*device_, values, ZeroSharding::store_keeps_whole_gradients(
                                                                         options_.zero_stage, world_)));
  if (world_ > 1) {
    // Every rank starts from rank 0's parameters (they loaded the same file;
    // this makes sure), 16-bit groups through their float32 masters.
    for (const ParameterStore::Group& grp : store_->groups()) {
      ASSIGN_OR_RETURN(Tensor host, to_host(*device_, grp.masters));  // the masters themselves on the CPU
      RETURN_IF_ERROR(options_.communicator->broadcast(host, 0));
      if (host.raw() != grp.masters.raw()) RETURN_IF_ERROR(device_->copy(host, grp.masters));
      if (grp.has_masters()) RETURN_IF_ERROR(math_->convert(grp.masters, grp.params));
    }
    RETURN_IF_ERROR(device_->synchronize());
  }
  store_->bind_initializers(g);
  return Status::Ok();
}

// The executor of the step graph (training/step_graph.h), each gradient bound
// to its slot in the store, and the hoisted 16-bit weight copies it reads.
Status Trainer::make_executor(StepGraph step) {
  store_->bind_initializers(step.model.graph);  // the step graph was made before the store
  stat_writebacks_ = std::move(step.state_writebacks);
  ASSIGN_OR_RETURN(executor_, Executor::create(step.model, device_));
  for (const ParameterStore::Entry& e : store_->entries()) {
    if (!e.grad.defined()) continue;  // ZeRO-2: taken from the run as they become final (ShardedGradients)
    // Each gradient is written (or, after the first micro-batch, added) straight into its slot.
    // 16-bit gradients are written every micro-batch and summed into their float32 master gradient.
    RETURN_IF_ERROR(executor_->bind_output(tg_.gradients.gradient.at(e.name), e.grad));
    grads_.push_back(e.master_grad);
  }
  // One rank on the CPU, float32 gradients: their norm read as the backward
  // makes each final (training/backward_norm.h).
  const bool masters = std::any_of(store_->groups().begin(), store_->groups().end(),
                                   [](const ParameterStore::Group& g) { return g.has_masters(); });
  if (world_ == 1 && device_->kind() == DeviceKind::kCpu && !masters) {
    std::vector<std::string> outputs;
    for (const ParameterStore::Entry& e : store_->entries()) outputs.push_back(tg_.gradients.gradient.at(e.name));
    backward_norm_.emplace(outputs, grads_, *math_);
  }
  // BatchNorm's running statistics: each new value written over its
  // initializer by the node that makes it, every micro-batch (as PyTorch's
  // forward updates them), with no copy after the run.
  for (const auto& [out_name, init] : stat_writebacks_) {
    ASSIGN_OR_RETURN(Tensor state, executor_->constant(init));
    RETURN_IF_ERROR(executor_->bind_state_output(out_name, state));
  }
  for (const HoistedCopy& h : step.hoisted) {
    ASSIGN_OR_RETURN(Tensor copy, executor_->constant(h.copy));
    low_copies_[h.weight].emplace_back(h.copy, copy);
  }
  // Made from the masters here: on a GPU the step graph's copies are
  // placeholders (the store's weights live on the device), and on either
  // device a weight may have changed since the step graph rounded it (LoRA's
  // --adapters are read after it is built: the first step ran on fresh ones).
  RETURN_IF_ERROR(refresh_low_copies());
  executor_->forget_host_copies(updated_initializers());
  return Status::Ok();
}

// The optimizer over the float32 masters (the parameters themselves unless
// they are 16-bit), or under ZeRO over this rank's share of them.
Status Trainer::make_optimizer() {
  std::vector<ParamSlot> params;
  if (ZeroSharding::active(options_.zero_stage, world_)) {
    ASSIGN_OR_RETURN(zero_, ZeroSharding::create(*store_, options_.zero_stage, options_.communicator, device_->kind()));
    params = zero_->optimizer_slots();
  } else {
    for (const ParameterStore::Entry& e : store_->entries()) {
      params.push_back(ParamSlot{e.name, e.master, true, {}});
      // The hoisted 16-bit copies: the CPU optimizers round them in their update's pass.
      auto copies = low_copies_.find(e.name);
      if (copies != low_copies_.end() && device_->kind() == DeviceKind::kCpu)
        for (const auto& [name, tensor] : copies->second) params.back().low.push_back(tensor);
    }
  }
  ASSIGN_OR_RETURN(optimizer_, ::ort_train::make_optimizer(device_->kind(), options_.optimizer, std::move(params)));
  if (zero_) optimizer_->set_norm_reducer(zero_->lamb_norms());
  return Status::Ok();
}

Result<StepReport> Trainer::step() {
  auto started = std::chrono::steady_clock::now();
  data_ms_ = 0;
  StepReport r;
  StepTotals totals;
  RETURN_IF_ERROR(forward_backward(totals));
  if (reducer_) {
    ASSIGN_OR_RETURN(r.allreduce_ms, reducer_->reduce(totals));
  }
  r.loss = totals.loss_sum / static_cast<double>(options_.grad_accum * world_);
  r.data_ms = data_ms_;
  r.samples = totals.samples;
  r.tokens = totals.tokens;
  const auto summed = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(float grad_scale, gradient_scale(r));
  if (!r.skipped) RETURN_IF_ERROR(update(r, grad_scale));
  r.update_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - summed).count();
  r.step_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return r;
}

Result<std::map<std::string, Tensor>> Trainer::next_micro_batch() {
  auto started = std::chrono::steady_clock::now();
  const int64_t index = source_index(micro_);
  // Loaded ahead for another position (a restore moved it): dropped, each
  // waited for by its future's destructor.
  if (!ahead_.empty() && ahead_.front().first != index) ahead_.clear();
  std::optional<Result<std::map<std::string, Tensor>>> loaded;
  if (!ahead_.empty()) {
    loaded.emplace(ahead_.front().second.get());
    ahead_.pop_front();
  } else {
    loaded.emplace(source_(index));  // the first step, or --prefetch 0
  }
  data_ms_ += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  // Keep `prefetch` micro-batches loading (batches are a function of their
  // index); on a GPU their upload starts there too (pinned memory, a copy
  // stream), overlapping this step.
  for (int64_t m = micro_ + 1 + static_cast<int64_t>(ahead_.size()); m <= micro_ + options_.prefetch; ++m) {
    const int64_t i = source_index(m);
    ahead_.emplace_back(i, std::async(std::launch::async,
                                      [src = source_, i, dev = device_, staging = staging_]()
                                          -> Result<std::map<std::string, Tensor>> {
                                        ASSIGN_OR_RETURN(auto batch, src(i));
                                        std::lock_guard lock(*staging);
                                        return dev->stage(std::move(batch));
                                      }));
  }
  return std::move(*loaded);
}

// The step's micro-batches on this rank: each gradient written (the first)
// or added (the others) into the store, 16-bit ones summed into their float32
// masters; BatchNorm statistics are written in place by the run.
Status Trainer::forward_backward(StepTotals& totals) {
  for (int64_t a = 0; a < options_.grad_accum; ++a) {
    ASSIGN_OR_RETURN(auto feeds, next_micro_batch());
    if (scaler_) feeds[tg_.loss_scale_input] = Tensor::scalar_f32(scaler_->scale());
    RunOptions run;
    run.training = true;
    run.seed = options_.seed;
    run.accumulate_bound_outputs = a > 0;
    run.step = static_cast<uint64_t>(source_index(micro_));  // random streams follow the global micro-batch
    ++micro_;
    if (!feeds.empty()) {
      const Tensor& first = feeds.begin()->second;
      totals.samples += first.rank() >= 1 ? first.dims()[0] : 1;
      for (const auto& [name, t] : feeds)
        if ((t.dtype() == DType::kInt64 || t.dtype() == DType::kInt32) && t.rank() >= 2) {
          totals.tokens += t.numel();
          break;
        }
    }
    // The last micro-batch's gradients start their reduction as they become
    // final; under ZeRO-2 every micro-batch's, and the run keeps only what is fetched.
    if (reducer_) reducer_->prepare(run, a, options_.grad_accum);
    if (backward_norm_ && a + 1 == options_.grad_accum) {
      backward_norm_->begin();
      run.on_output_ready = [this](const std::string& name, const Tensor&) {
        return backward_norm_->gradient_ready(name);
      };
    }
    std::vector<std::string> fetch;
    if (run.release_outputs) fetch.push_back(tg_.gradients.loss);
    ASSIGN_OR_RETURN(auto out, executor_->run(feeds, run, fetch));
    if (reducer_) RETURN_IF_ERROR(reducer_->after_run(*executor_));
    const Tensor& loss = out.at(tg_.gradients.loss);
    if (loss_slots_.size() <= static_cast<size_t>(a)) loss_slots_.resize(static_cast<size_t>(a) + 1);
    Tensor& slot = loss_slots_[static_cast<size_t>(a)];
    if (!slot.defined() || slot.dtype() != loss.dtype() || slot.dims() != loss.dims())
      slot = Tensor(loss.dtype(), loss.dims(), executor_->allocator().allocate(loss.nbytes()));
    RETURN_IF_ERROR(device_->copy(loss, slot));
    // 16-bit gradients into their float32 master gradients, one whole group at a time.
    for (const ParameterStore::Group& grp : store_->groups())
      if (grp.has_masters() && grp.grads.defined()) RETURN_IF_ERROR(a == 0 ? math_->convert(grp.grads, grp.master_grads)
                                                    : math_->add_into(grp.master_grads, grp.grads));
  }
  // The step's losses, read to the host once (one synchronization on a GPU),
  // summed in micro-batch order.
  ASSIGN_OR_RETURN(std::vector<double> losses,
                   loss_values(*device_, std::vector<Tensor>(loss_slots_.begin(),
                                                             loss_slots_.begin() + options_.grad_accum)));
  ++loss_reads_;
  for (double loss : losses) totals.loss_sum += loss;
  return Status::Ok();
}

// Without ZeRO, or with ZeRO-1 in deterministic mode (where every rank holds
// every summed gradient), the norm and the checks read every gradient, so
// ZeRO-1 matches zero 0 bit for bit; otherwise ZeRO's shares.
bool Trainer::all_gradients_here() const { return !zero_ || zero_->every_gradient_here(); }

size_t Trainer::gradient_bytes() const {
  size_t bytes = zero_ ? zero_->gradient_bytes() : 0;
  for (const ParameterStore::Group& grp : store_->groups()) {
    if (grp.grads.defined()) bytes += grp.grads.nbytes();
    if (grp.has_masters() && grp.master_grads.defined()) bytes += grp.master_grads.nbytes();
  }
  return bytes + (reducer_ ? reducer_->buffer_bytes() : 0);
}

// The norm of the summed gradients: read during the backward (one rank on
// the CPU), or in one read pass. Every rank takes the same branch and gets the
// same norm (it is summed over the ranks).
Result<double> Trainer::summed_gradient_norm() {
  if (backward_norm_) return backward_norm_->finish();
  if (all_gradients_here()) return math_->global_norm(grads_);
  return zero_->gradient_norm(*math_);
}

// What happens to the gradients between the backward and the update, as one
// factor the optimizer applies where it reads them (numerics/optimizer_math.h):
//   - GradScaler's unscale (--precision fp16): an inf or NaN in any gradient
//     (a non-finite norm) skips the update and lowers the scale;
//   - the mean over the step's micro-batches of every rank;
//   - torch.nn.utils.clip_grad_norm_: max_norm / (norm + 1e-6) when below 1.
// The norm is taken every step, before any of them, on the summed gradients:
// it is also the check that none is inf or NaN under a finite loss (Sqrt at
// 0, an lr that diverged), which the update would spread into every weight.
// After the backward the gradients are read once (the update; one CPU rank
// took the norm during the backward) or twice (the norm, the update), and
// written never, where unscaling, averaging and clipping each read and wrote them.
Result<float> Trainer::gradient_scale(StepReport& r) {
  ASSIGN_OR_RETURN(double summed, summed_gradient_norm());
  double factor = 1.0 / static_cast<double>(options_.grad_accum * world_);
  if (scaler_) {
    r.loss_scale = scaler_->scale();
    factor /= static_cast<double>(*r.loss_scale);
    const bool found_inf = !std::isfinite(summed);
    scaler_->update(found_inf);
    if (found_inf) {
      skip_update(r);
      spdlog::info("step {}: a gradient holds inf or NaN at loss scale {}: update skipped, scale now {}", r.step,
                   *r.loss_scale, scaler_->scale());
      return 0.f;
    }
  }
  r.grad_norm = summed * factor;
  if (!std::isfinite(*r.grad_norm)) {
    RETURN_IF_ERROR(nonfinite_gradients(r));
    return 0.f;  // --on-nonfinite skip: skipped
  }
  if (options_.optimizer.max_grad_norm) {
    const double coef = *options_.optimizer.max_grad_norm / (*r.grad_norm + 1e-6);
    if (coef < 1.0) factor *= coef;
  }
  return static_cast<float>(factor);
}

// A step without an update still counts, for the schedule as for PyTorch's
// loop; the optimizer's own count (bias correction) leaves it out.
void Trainer::skip_update(StepReport& r) {
  ++skipped_;
  r.skipped = true;
  r.step = ++steps_done_;
  r.lr = options_.optimizer.lr * lr_multiplier(options_.schedule, r.step, options_.steps, options_.optimizer.lr);
}

// Gradients with inf or NaN (the norm said so): stop, naming the first such
// tensor, or (--on-nonfinite skip) count the step as skipped without an update.
Status Trainer::nonfinite_gradients(StepReport& r) {
  std::string first;
  if (all_gradients_here())
    for (size_t i = 0; i < grads_.size() && first.empty(); ++i) {
      ASSIGN_OR_RETURN(double n, math_->global_norm({grads_[i]}));
      if (!std::isfinite(n) && i < tg_.gradients.trainable.size()) first = tg_.gradients.trainable[i];
    }
  const std::string which = first.empty() ? "a gradient" : fmt::format("the gradient of '{}'", first);
  if (!options_.skip_nonfinite) {
    // Say what is true of the loss, and name a weight that is already
    // non-finite: the update before this step made it so (an lr that
    // diverged), and every gradient after it follows.
    std::string weight;
    for (const ParameterStore::Entry& e : store_->entries()) {
      ASSIGN_OR_RETURN(double n, math_->global_norm({e.master}));
      if (!std::isfinite(n)) {
        weight = fmt::format("; the weight '{}' itself holds inf or NaN", e.name);
        break;
      }
    }
    const std::string loss = std::isfinite(r.loss) ? fmt::format("although the loss ({:g}) is finite", r.loss)
                                                   : std::isnan(r.loss) ? std::string("and so does the loss (NaN)")
                                                                        : fmt::format("and so does the loss ({:g})", r.loss);
    return invalid_argument(
        "step {}: {} holds inf or NaN {}{}: stopped before the update, so no checkpoint or export holds it "
        "(--on-nonfinite skip skips such steps instead)",
        steps_done_ + 1, which, loss, weight);
  }
  skip_update(r);
  spdlog::warn("step {}: {} holds inf or NaN: update skipped (--on-nonfinite skip)", r.step, which);
  return Status::Ok();
}

// The optimizer's step at the scheduled learning rate, then every copy the
// graph reads refreshed from the updated float32 masters.
Status Trainer::update(StepReport& r, float grad_scale) {
  // The schedule counts steps, skipped ones too (PyTorch's scheduler steps every iteration).
  int64_t t = steps_done_ + 1;
  r.lr = options_.optimizer.lr * lr_multiplier(options_.schedule, t, options_.steps, options_.optimizer.lr);
  RETURN_IF_ERROR(optimizer_->step(zero_ ? zero_->gradients() : grads_, r.lr, grad_scale));
  if (zero_) RETURN_IF_ERROR(zero_->gather_parameters());
  // The 16-bit parameters the graph reads, rounded from the updated masters.
  for (const ParameterStore::Group& grp : store_->groups())
    if (grp.has_masters()) RETURN_IF_ERROR(math_->convert(grp.masters, grp.params));
  // The hoisted weight copies, where the optimizer did not round them in its pass.
  if (zero_ || device_->kind() != DeviceKind::kCpu) RETURN_IF_ERROR(refresh_low_copies());
  r.step = ++steps_done_;
  return Status::Ok();
}

namespace {

std::string hex_hash(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace

std::map<std::string, std::string> training_fingerprint(const TrainingGraph& tg, const TrainerOptions& options) {
  const Graph& g = tg.model.graph;
  std::string structure;
  for (size_t i : nodes_reaching(g, tg.eval_outputs)) structure += g.nodes[i].op_type + ":" + g.nodes[i].name + ";";
  for (const std::string& name : g.initializer_order) {
    structure += name + "[";
    for (int64_t d : g.initializers.at(name).dims()) structure += std::to_string(d) + ",";
    structure += "]";
  }
  std::string trainable;
  for (const std::string& w : tg.gradients.trainable) trainable += w + ";";
  const OptimizerSettings& o = options.optimizer;
  std::map<std::string, std::string> parts{
          {"model", hex_hash(structure)},
          {"trainable", fmt::format("{} tensors, {}", tg.gradients.trainable.size(), hex_hash(trainable))},
          {"loss", tg.gradients.loss},
          {"optimizer", fmt::format("{}{}, momentum {}", o.name, o.huggingface ? " (huggingface)" : "", o.momentum)},
          // Micro-batches per step over the whole job: N ranks x k resume as M ranks x k' when N*k = M*k'.
          {"grad_accum",
           std::to_string(options.grad_accum * (options.communicator ? options.communicator->size() : 1))}};
  // A checkpoint resumes in the precision it was written in (the graph's casts
  // and fp16's scaler state are part of it); fp32 writes no key, as before.
  if (tg.autocast.low != DType::kFloat) parts["precision"] = tg.autocast.low == DType::kFloat16 ? "fp16" : "bf16";
  // lora:'s numbers are values, not structure: another alpha trains other weights from the same adapters.
  if (!tg.lora.adapters.empty())
    parts["lora"] = fmt::format("rank {}, alpha {}, dropout {}", tg.lora.settings.rank, tg.lora.settings.alpha,
                                tg.lora.settings.dropout);
  return parts;
}

Result<Checkpoint> Trainer::snapshot(const std::map<std::string, std::string>& fingerprint, bool detached) const {
  Checkpoint c;
  c.step = steps_done_;
  c.micro_batch = base_ + micro_ * world_;  // micro-batches consumed by the whole job
  c.seed = options_.seed;
  c.fingerprint = fingerprint;
  auto add = [&](const std::string& key, const Tensor& t) -> Status {
    // On the CPU the snapshot shares the live buffers unless detached.
    ASSIGN_OR_RETURN(Tensor h, to_host(*device_, t));
    c.tensors.emplace_back(key, detached && h.raw() == t.raw() ? h.clone() : std::move(h));
    return Status::Ok();
  };
  for (const std::string& w : tg_.gradients.trainable) {
    ASSIGN_OR_RETURN(Tensor v, executor_->constant(w));
    RETURN_IF_ERROR(add("param/" + w, v));
  }
  for (const auto& [out, init] : stat_writebacks_) {
    ASSIGN_OR_RETURN(Tensor v, executor_->constant(init));
    RETURN_IF_ERROR(add("param/" + init, v));
  }
  // A 16-bit parameter continues from its float32 master, not from its rounding.
  for (const ParameterStore::Entry& e : store_->entries())
    if (e.master.raw() != e.param.raw()) RETURN_IF_ERROR(add("master/" + e.name, e.master));
  if (scaler_) {
    // GradScaler's state, and how many steps it skipped (the optimizer took c.step minus those).
    c.tensors.emplace_back("scaler/scale", Tensor::from_vector<float>({1}, {scaler_->scale()}));
    c.tensors.emplace_back("scaler/growth_tracker", Tensor::from_vector<int64_t>({1}, {scaler_->growth_tracker()}));
    c.tensors.emplace_back("scaler/skipped_steps", Tensor::from_vector<int64_t>({1}, {skipped_}));
  } else if (skipped_ > 0) {
    // Steps --on-nonfinite skip left without an update (the optimizer took c.step minus those).
    c.tensors.emplace_back("trainer/skipped_steps", Tensor::from_vector<int64_t>({1}, {skipped_}));
  }
  for (const auto& [name, t] : optimizer_->state()) {
    if (!zero_ || !t->defined() || t->numel() == 0) {
      RETURN_IF_ERROR(add("state/" + name, *t));
      continue;
    }
    // ZeRO: the complete state, in zero 0's layout (every rank takes part; rank 0 writes it).
    ASSIGN_OR_RETURN(Tensor full, zero_->gather_state(*t));
    c.tensors.emplace_back("state/" + name, std::move(full));
  }
  return c;
}

std::vector<std::string> Trainer::updated_initializers() const {
  std::vector<std::string> names = tg_.gradients.trainable;
  for (const auto& [out, init] : stat_writebacks_) names.push_back(init);
  for (const auto& [weight, copies] : low_copies_)
    for (const auto& [name, tensor] : copies) names.push_back(name);
  return names;
}

Status Trainer::refresh_low_copies() {
  for (const auto& [weight, copies] : low_copies_)
    for (const auto& [name, low] : copies) RETURN_IF_ERROR(math_->convert(store_->find(weight)->master, low));
  return Status::Ok();
}

Status Trainer::sync_to_host() {
  // In place: the caller's forward model shares the original tensors.
  for (const auto& [name, original] : originals_) {
    const Tensor& param = store_->find(name)->param;
    if (param.raw() != original.raw()) RETURN_IF_ERROR(device_->copy(param, original));  // the CPU store holds them
  }
  if (device_->kind() != DeviceKind::kCpu) {
    Graph& g = tg_.model.graph;  // running statistics: the GPU executor reads its own copies
    for (const auto& [out, init] : stat_writebacks_) {
      ASSIGN_OR_RETURN(Tensor v, executor_->constant(init));
      RETURN_IF_ERROR(device_->copy(v, g.initializers.at(init)));
    }
  }
  return device_->synchronize();
}

namespace {

// The checkpoint's fingerprint against this run's, key by key. Keys either
// side: a part one side lacks has its default ("precision" is fp32 where it
// is not written), so checkpoints from before a key existed load.
Status check_fingerprint(const std::map<std::string, std::string>& have_parts,
                         const std::map<std::string, std::string>& want_parts) {
  std::set<std::string> keys;
  for (const auto& [key, value] : want_parts) keys.insert(key);
  for (const auto& [key, value] : have_parts) keys.insert(key);
  keys.erase("precision");
  auto part = [](const std::map<std::string, std::string>& f, const std::string& key) -> std::string {
    auto it = f.find(key);
    return it != f.end() ? it->second : key == "precision" ? "fp32" : "(none)";
  };
  std::vector<std::string> order{"precision"};  // first: another precision also changes the model's hash
  order.insert(order.end(), keys.begin(), keys.end());
  for (const std::string& key : order) {
    std::string have = part(have_parts, key), want = part(want_parts, key);
    if (have != want)
      return invalid_argument("the checkpoint does not match this run: {} is '{}' in the checkpoint, '{}' here", key,
                              have, want);
  }
  return Status::Ok();
}

}  // namespace

Status Trainer::restore(const CheckpointReader& c, const std::map<std::string, std::string>& fingerprint) {
  RETURN_IF_ERROR(check_fingerprint(c.fingerprint, fingerprint));
  int64_t skipped = 0;
  std::map<std::string, Tensor> targets;
  for (const std::string& w : tg_.gradients.trainable) {
    ASSIGN_OR_RETURN(targets["param/" + w], executor_->constant(w));
  }
  for (const auto& [out, init] : stat_writebacks_) {
    ASSIGN_OR_RETURN(targets["param/" + init], executor_->constant(init));
  }
  for (auto& [name, t] : optimizer_->state()) targets["state/" + name] = *t;
  for (const ParameterStore::Entry& e : store_->entries())
    if (e.master.raw() != e.param.raw()) targets["master/" + e.name] = e.master;
  std::map<std::string, Tensor> counters;  // scaler/* and trainer/skipped_steps: one-element values
  if (scaler_)
    for (const char* key : {"scaler/scale", "scaler/growth_tracker", "scaler/skipped_steps"}) targets[key] = Tensor();
  else if (std::any_of(c.entries().begin(), c.entries().end(),
                       [](const auto& e) { return e.name == "trainer/skipped_steps"; }))
    targets["trainer/skipped_steps"] = Tensor();
  if (targets.size() != c.entries().size())
    return invalid_argument("the checkpoint holds {} tensors, this run has {}", c.entries().size(), targets.size());
  // Tensor by tensor from the file into the buffers the run trains (through
  // one tensor's host copy on a GPU): a resume holds no second copy of the state.
  for (size_t i = 0; i < c.entries().size(); ++i) {
    const CheckpointReader::Entry& e = c.entries()[i];
    const std::string& name = e.name;
    auto it = targets.find(name);
    if (it == targets.end()) return invalid_argument("the checkpoint holds '{}', which this run does not have", name);
    const Tensor& dst = it->second;
    if (name.rfind("scaler/", 0) == 0 || name == "trainer/skipped_steps") {
      DType want = name == "scaler/scale" ? DType::kFloat : DType::kInt64;
      if (e.dtype != want || e.bytes != dtype_size(want))
        return invalid_argument("the checkpoint's '{}' is {} {}, not one {}", name, dtype_name(e.dtype),
                                dims_to_string(e.dims), dtype_name(want));
      ASSIGN_OR_RETURN(counters[name], c.read_tensor(i));
      continue;
    }
    if (zero_ && name.rfind("state/", 0) == 0) {
      ASSIGN_OR_RETURN(bool read, zero_->read_state_share(c, i, dst));  // this rank's part of the whole state
      if (read) continue;
    }
    if (dst.dims() != e.dims || dst.dtype() != e.dtype)
      return invalid_argument("the checkpoint's '{}' has another shape or dtype", name);
    // In place: the executor and optimizer read these buffers.
    if (dst.storage() && dst.storage()->device() == DeviceKind::kCpu) {
      RETURN_IF_ERROR(c.read(i, dst.raw()));
    } else {
      ASSIGN_OR_RETURN(Tensor t, c.read_tensor(i));
      RETURN_IF_ERROR(device_->copy(t, dst));
      RETURN_IF_ERROR(device_->synchronize());  // before `t` is freed
    }
  }
  RETURN_IF_ERROR(refresh_low_copies());  // from the restored weights
  RETURN_IF_ERROR(device_->synchronize());
  for (const char* key : {"scaler/skipped_steps", "trainer/skipped_steps"})
    if (counters.count(key)) skipped = counters.at(key).data<int64_t>()[0];
  if (skipped < 0 || skipped > c.step)
    return invalid_argument("the checkpoint says {} of its {} steps were skipped", skipped, c.step);
  if (scaler_) {
    // GradScaler's state as it can be: a finite positive scale (NaN skipped
    // every step and was written on), a count of clean steps below the interval.
    const float scale = counters.at("scaler/scale").data<float>()[0];
    const int64_t tracker = counters.at("scaler/growth_tracker").data<int64_t>()[0];
    if (!std::isfinite(scale) || scale <= 0)
      return invalid_argument("the checkpoint's loss scale is {}: a loss scale is a finite number above 0", scale);
    if (tracker < 0 || tracker >= std::max<int64_t>(options_.loss_scale.growth_interval, 1))
      return invalid_argument("the checkpoint's loss scale growth tracker is {}: it counts clean steps from 0 to "
                              "growth_interval {} - 1",
                              tracker, options_.loss_scale.growth_interval);
    scaler_->restore(scale, tracker);
  }
  // The data position against what the run can reach from it: each step
  // reads at least one micro-batch, and the rest of the run must not carry
  // the position past what an int64 counts (a forged one wrapped negative).
  const int64_t remaining = std::max<int64_t>(0, options_.steps - c.step);
  int64_t more = 0, end = 0;
  if (c.micro_batch < c.step || __builtin_mul_overflow(remaining, options_.grad_accum * world_, &more) ||
      __builtin_add_overflow(c.micro_batch, more, &end) || end > (int64_t{1} << 62))
    return invalid_argument("the checkpoint's data position (micro-batch {}) cannot be that of a run at step {} "
                            "that continues for {} more steps",
                            c.micro_batch, c.step, remaining);
  skipped_ = skipped;
  steps_done_ = c.step;
  optimizer_->set_steps_taken(c.step - skipped);
  base_ = c.micro_batch;  // any world size continues from the job's position
  micro_ = 0;
  return Status::Ok();
}

Status Trainer::check_evaluation_data(const BatchSource& source, int64_t batches) const {
  ASSIGN_OR_RETURN(Model fwd, build_eval_graph(tg_));
  std::vector<IndexBound> bounds = gather_index_bounds(fwd.graph);
  for (int64_t b = 0; b < batches; ++b) {
    ASSIGN_OR_RETURN(auto feeds, source(b));
    Status s = check_graph_feeds(fwd.graph, feeds);
    if (s.ok()) s = check_index_bounds(feeds, bounds);
    if (!s.ok()) return s.with_context(batches > 1 ? fmt::format("batch {} of {}", b + 1, batches) : "its batch");
  }
  return Status::Ok();
}

Result<EvalReport> Trainer::evaluate(const BatchSource& source, int64_t batches) {
  const LossSpec& spec = tg_.loss;
  bool classify = is_classification(spec);
  if (!eval_executor_) {
    // The tensors share storage, so it sees the trained values.
    ASSIGN_OR_RETURN(Model fwd, build_eval_graph(tg_));
    ASSIGN_OR_RETURN(eval_executor_, Executor::create(fwd, device_, executor_.get()));
    eval_executor_->forget_host_copies(updated_initializers());
  }
  EvalReport r;
  int64_t correct = 0, counted = 0;
  for (int64_t b = 0; b < batches; ++b) {
    ASSIGN_OR_RETURN(auto feeds, source(b));
    RunOptions run;  // not a training run: Dropout is the identity
    ASSIGN_OR_RETURN(auto out, eval_executor_->run(feeds, run));
    ASSIGN_OR_RETURN(double loss, loss_value(*device_, out.at(tg_.gradients.loss)));
    r.loss += loss;
    if (classify && out.at(spec.input).dtype() == DType::kFloat) {
      ASSIGN_OR_RETURN(Tensor logits, to_host(*device_, out.at(spec.input)));
      std::vector<int64_t> labels = feeds.at(spec.target).to_int64_vector();
      int64_t c = logits.dims().back(), rows = logits.numel() / std::max<int64_t>(c, 1);
      for (int64_t i = 0; i < rows && i < static_cast<int64_t>(labels.size()); ++i) {
        if (labels[static_cast<size_t>(i)] == spec.ignore_index) continue;
        const float* row = logits.data<float>() + i * c;
        int64_t best = std::max_element(row, row + c) - row;
        correct += best == labels[static_cast<size_t>(i)];
        ++counted;
      }
    }
    ++r.batches;
  }
  r.loss /= static_cast<double>(std::max<int64_t>(r.batches, 1));
  if (counted > 0) r.accuracy = static_cast<double>(correct) / static_cast<double>(counted);
  return r;
}

}  // namespace ort_train
