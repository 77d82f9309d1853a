#include "training/trainer.h"

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

namespace ort_train {

Result<std::unique_ptr<Trainer>> Trainer::create(TrainingGraph tg, TrainerOptions options, BatchSource source) {
  std::unique_ptr<Trainer> t(new Trainer());
  t->tg_ = std::move(tg);
  t->options_ = std::move(options);
  t->source_ = std::move(source);
  if (t->options_.grad_accum < 1) return invalid_argument("grad_accum must be at least 1");
  Graph& g = t->tg_.model.graph;
  // BatchNormalization in training mode: outputs 1/2 are the updated running
  // statistics, to be stored back where inputs 3/4 read them next step.
  for (const Node& n : g.nodes) {
    if (n.op_type != "BatchNormalization" || n.domain != "") continue;
    for (size_t k = 1; k <= 2; ++k)
      if (n.outputs.size() > k && !n.outputs[k].empty() && n.inputs.size() > k + 2 && g.is_initializer(n.inputs[k + 2]))
        t->stat_writebacks_.emplace_back(n.outputs[k], n.inputs[k + 2]);
  }
  for (const auto& writeback : t->stat_writebacks_) {
    const std::string& out = writeback.first;
    if (std::none_of(g.outputs.begin(), g.outputs.end(), [&](const ValueInfo& v) { return v.name == out; }))
      g.outputs.push_back(*g.value(out));
  }
  t->device_ = t->options_.device;
  if (!t->device_) {
    ASSIGN_OR_RETURN(t->device_, get_device(DeviceKind::kCpu));
  }
  // The parameter store: trainable tensors become views into one flat buffer
  // per dtype on the device, gradients views into another. The graph's
  // initializers are replaced by the views (the executor reads them); the
  // originals, which the caller's forward model shares, get the trained
  // values back in sync_to_host.
  std::vector<std::pair<std::string, Tensor>> values;
  for (const std::string& w : t->tg_.gradients.trainable) {
    const Tensor& v = g.initializers.at(w);
    if (!dtype_is_float(v.dtype()))
      return invalid_argument("trainable '{}' has dtype {}; only floating-point tensors train", w, dtype_name(v.dtype()));
    values.emplace_back(w, v);
    t->originals_[w] = v;
  }
  ASSIGN_OR_RETURN(t->store_, ParameterStore::create(*t->device_, values));
  if (t->options_.communicator && t->options_.communicator->size() > 1) {
    t->rank_ = t->options_.communicator->rank();
    t->world_ = t->options_.communicator->size();
    // Every rank starts from rank 0's parameters (they loaded the same file;
    // this makes sure), 16-bit groups through their float32 masters.
    for (const ParameterStore::Group& grp : t->store_->groups()) {
      ASSIGN_OR_RETURN(Tensor host, to_host(*t->device_, grp.masters));  // the masters themselves on the CPU
      RETURN_IF_ERROR(t->options_.communicator->broadcast(host, 0));
      if (host.raw() != grp.masters.raw()) RETURN_IF_ERROR(t->device_->copy(host, grp.masters));
      if (grp.has_masters()) {
        ASSIGN_OR_RETURN(VectorOps * ops, vector_ops(t->device_->kind()));
        RETURN_IF_ERROR(ops->convert(grp.masters, grp.params));
      }
    }
    RETURN_IF_ERROR(t->device_->synchronize());
  }
  for (const ParameterStore::Entry& e : t->store_->entries()) g.initializers[e.name] = e.param;
  RETURN_IF_ERROR(t->hoist_weight_casts());
  std::vector<std::string> stats;
  for (const auto& writeback : t->stat_writebacks_) stats.push_back(writeback.first);
  ASSIGN_OR_RETURN(Model step, training_step_model(t->tg_.model, t->tg_.gradients, stats));
  ASSIGN_OR_RETURN(t->executor_, Executor::create(step, t->device_));
  ASSIGN_OR_RETURN(t->math_, vector_ops(t->device_->kind()));
  std::vector<ParamSlot> params;
  for (const ParameterStore::Entry& e : t->store_->entries()) {
    // Each gradient is written (or, after the first micro-batch, added) straight into its slot.
    // 16-bit gradients are written every micro-batch and summed into their float32 master gradient.
    RETURN_IF_ERROR(t->executor_->bind_output(t->tg_.gradients.gradient.at(e.name), e.grad));
    // The optimizer updates float32 masters: the parameters themselves unless they are 16-bit.
    params.push_back(ParamSlot{e.name, e.master, true, {}});
    t->grads_.push_back(e.master_grad);
  }
  // The hoisted 16-bit weight copies, where the executor reads them; the CPU
  // optimizers round them in their update's pass (ZeRO's shards excepted).
  for (auto& [weight, copies] : t->low_copies_) {
    for (auto& [name, tensor] : copies) {
      ASSIGN_OR_RETURN(tensor, t->executor_->constant(name));
    }
    if (t->device_->kind() != DeviceKind::kCpu) continue;
    for (ParamSlot& slot : params)
      if (slot.name == weight)
        for (const auto& [name, tensor] : copies) slot.low.push_back(tensor);
  }
  t->executor_->forget_host_copies(t->updated_initializers());
  if (t->options_.zero_stage == 1 && t->world_ > 1) {
    if (t->device_->kind() != DeviceKind::kCpu)
      return unsupported("--zero 1 runs on the CPU so far (the GPU optimizers take no shard-wide LAMB norms and "
                         "checkpoints do not gather device shards yet); use --zero 0 on GPUs");
    if (t->store_->groups().size() != 1)
      return unsupported("--zero 1 needs every trainable tensor in one dtype (here {} dtypes)",
                         t->store_->groups().size());
    // This rank's consecutive share of the flat buffer; the optimizer gets a
    // slot for each part of a tensor in it (weight decay follows the tensor's name).
    const ParameterStore::Group& grp = t->store_->groups()[0];
    const int64_t n = grp.masters.numel(), world = t->world_;
    auto bound = [&](int64_t r) { return n * r / world; };
    params.clear();
    t->shard_counts_.assign(static_cast<size_t>(world), 0);
    t->state_counts_.assign(static_cast<size_t>(world), 0);
    for (int64_t r = 0; r < world; ++r) t->shard_counts_[static_cast<size_t>(r)] = bound(r + 1) - bound(r);
    for (const ParameterStore::Entry& e : t->store_->entries()) {
      int64_t first = static_cast<int64_t>(e.offset / dtype_size(e.param.dtype())), count = e.param.numel();
      for (int64_t r = 0; r < world; ++r) {
        int64_t a = std::max(first, bound(r)), b = std::min(first + count, bound(r + 1));
        if (a >= b) continue;
        t->state_counts_[static_cast<size_t>(r)] += b - a;
        if (r != t->rank_) continue;
        auto view = [&](const Tensor& buffer) {
          return Tensor(DType::kFloat, {b - a}, Storage::view(buffer.storage(), static_cast<size_t>(a) * 4,
                                                                static_cast<size_t>(b - a) * 4));
        };
        params.push_back(ParamSlot{e.name, view(grp.masters), true});
        t->shard_grads_.push_back(view(grp.master_grads));
        t->slot_tensor_.push_back(static_cast<size_t>(&e - t->store_->entries().data()));
      }
    }
    for (int64_t r = 0; r < world; ++r) {
      if (r < t->rank_) t->state_offset_ += t->state_counts_[static_cast<size_t>(r)];
      t->state_total_ += t->state_counts_[static_cast<size_t>(r)];
    }
    t->zero_ = true;
  } else if (t->options_.zero_stage != 0 && t->options_.zero_stage != 1) {
    return invalid_argument("--zero {}: stages 0 and 1 exist", t->options_.zero_stage);
  }
  if (t->world_ > 1 && t->device_->kind() == DeviceKind::kCuda) {
    // NCCL reduces the gradients on the GPU; without it they go through host memory over MPI.
    // On the trainer's own GPU (--device cuda:N, else the launcher's local rank, as choose_device decided).
    auto nccl = device_communicator("nccl", t->options_.communicator, t->device_->index());
    if (nccl.ok()) t->device_comm_ = *nccl;
    else spdlog::warn("GPU gradients are reduced through host memory: {}", nccl.status().message());
  }
  // Buckets overlap the backward with MPI on the CPU and with NCCL's own stream on GPUs;
  // GPU gradients reduced through host memory wait for the whole backward.
  if (t->options_.allreduce_dtype != DType::kFloat && t->zero_)
    return unsupported("--allreduce-dtype bf16 with --zero 1: ZeRO reduce-scatters float32 gradients so far");
  if (t->world_ > 1 && !t->zero_ && (t->device_->kind() == DeviceKind::kCpu || t->device_comm_)) {
    ASSIGN_OR_RETURN(t->buckets_, GradientBuckets::create(*t->store_, t->tg_.gradients, t->options_.bucket_bytes,
                                                          t->options_.allreduce_dtype, *t->device_));
  }
  ASSIGN_OR_RETURN(t->optimizer_, make_optimizer(t->device_->kind(), t->options_.optimizer, std::move(params)));
  if (!t->tg_.loss_scale_input.empty()) t->scaler_.emplace(t->options_.loss_scale);
  if (t->zero_) {
    // LAMB's trust ratios: each slot's partial ||w||² and ||r||², summed per whole tensor over the ranks.
    Trainer* self = t.get();
    t->optimizer_->set_norm_reducer([self](std::vector<double>& w_sq, std::vector<double>& r_sq) -> Status {
      size_t tensors = self->store_->entries().size();
      Tensor sums = Tensor::host(DType::kDouble, {static_cast<int64_t>(2 * tensors)});
      double* s = sums.data<double>();
      for (size_t j = 0; j < w_sq.size(); ++j) {
        s[2 * self->slot_tensor_[j]] += w_sq[j];
        s[2 * self->slot_tensor_[j] + 1] += r_sq[j];
      }
      RETURN_IF_ERROR(self->options_.communicator->allreduce_sum(sums));
      for (size_t j = 0; j < w_sq.size(); ++j) {
        w_sq[j] = s[2 * self->slot_tensor_[j]];
        r_sq[j] = s[2 * self->slot_tensor_[j] + 1];
      }
      return Status::Ok();
    });
  }
  return t;
}

Result<double> Trainer::read_loss(const Tensor& loss) const {
  if (!dtype_is_float(loss.dtype()) || loss.numel() < 1)
    return invalid_argument("the loss must be a floating-point scalar, got {} {}", dtype_name(loss.dtype()),
                            dims_to_string(loss.dims()));
  ASSIGN_OR_RETURN(Tensor host, to_host(*device_, loss));
  return float_element(host.dtype(), host.raw(), 0);
}

Result<StepReport> Trainer::step(bool want_grad_norm) {
  auto started = std::chrono::steady_clock::now();
  StepReport r;
  const GradientGraph& gg = tg_.gradients;
  double loss_sum = 0;
  for (int64_t a = 0; a < options_.grad_accum; ++a) {
    std::optional<Result<std::map<std::string, Tensor>>> loaded;
    if (prefetch_.valid()) {
      auto ready = prefetch_.get();  // always waited for: sources are not safe to call concurrently
      if (prefetch_index_ == source_index(micro_)) loaded.emplace(std::move(ready));
    }
    if (!loaded) loaded.emplace(source_(source_index(micro_)));  // first step, or after a restore moved the position
    ASSIGN_OR_RETURN(auto feeds, std::move(*loaded));
    if (scaler_) feeds[tg_.loss_scale_input] = Tensor::scalar_f32(scaler_->scale());
    // Load the next micro-batch while this one runs (batches are a function of their index).
    prefetch_index_ = source_index(micro_ + 1);
    // On a GPU its upload starts there too (pinned memory, a copy stream): it overlaps this step.
    prefetch_ = std::async(std::launch::async,
                           [src = source_, i = prefetch_index_, dev = device_]() -> Result<std::map<std::string, Tensor>> {
                             ASSIGN_OR_RETURN(auto batch, src(i));
                             return dev->stage(std::move(batch));
                           });
    RunOptions run;
    run.training = true;
    run.seed = options_.seed;
    // The first micro-batch writes each gradient into its slot, the others add to it.
    run.accumulate_bound_outputs = a > 0;
    run.step = static_cast<uint64_t>(source_index(micro_));  // random streams follow the global micro-batch
    ++micro_;
    if (!feeds.empty()) {
      const Tensor& first = feeds.begin()->second;
      r.samples += first.rank() >= 1 ? first.dims()[0] : 1;
      for (const auto& [name, t] : feeds)
        if ((t.dtype() == DType::kInt64 || t.dtype() == DType::kInt32) && t.rank() >= 2) {
          r.tokens += t.numel();
          break;
        }
    }
    const bool last_micro_batch = a + 1 == options_.grad_accum;
    if (buckets_ && last_micro_batch) {
      // Each bucket's allreduce starts as its last gradient becomes final.
      buckets_->begin();
      run.on_output_ready = [this](const std::string& name, const Tensor&) {
        return buckets_->gradient_ready(name, reducer());
      };
    }
    ASSIGN_OR_RETURN(auto out, executor_->run(feeds, run));
    ASSIGN_OR_RETURN(double loss, read_loss(out.at(gg.loss)));
    loss_sum += loss;
    // 16-bit gradients into their float32 master gradients, one whole group at a time.
    for (const ParameterStore::Group& grp : store_->groups())
      if (grp.has_masters()) RETURN_IF_ERROR(a == 0 ? math_->convert(grp.grads, grp.master_grads)
                                                    : math_->add_into(grp.master_grads, grp.grads));
    for (const auto& [out_name, init] : stat_writebacks_) {
      ASSIGN_OR_RETURN(Tensor dst, executor_->constant(init));
      RETURN_IF_ERROR(device_->copy(out.at(out_name), dst));
    }
  }
  const int64_t micro_batches = options_.grad_accum * world_;  // in this step, over every rank
  if (world_ > 1) RETURN_IF_ERROR(reduce_over_ranks(r, loss_sum));
  r.loss = loss_sum / static_cast<double>(micro_batches);
  // The gradients this rank's optimizer reads: its ZeRO share, or all of them.
  const std::vector<Tensor>& mine = zero_ ? shard_grads_ : grads_;
  // Without ZeRO, or with ZeRO in deterministic mode (where every rank holds
  // every summed gradient), the norm is taken over all of them, so ZeRO
  // matches zero 0 bit for bit; otherwise over the shares, added over the ranks.
  const bool all_here = !zero_ || options_.communicator->ordered_sums();
  if (scaler_) {
    // GradScaler: unscale, and skip the update when any gradient overflowed.
    r.loss_scale = scaler_->scale();
    ASSIGN_OR_RETURN(bool found_inf, math_->unscale(all_here ? grads_ : shard_grads_, scaler_->inverse()));
    if (!all_here) {  // ZeRO shares: an overflow in any rank's share skips the step everywhere
      Tensor flag = Tensor::from_vector<double>({1}, {found_inf ? 1.0 : 0.0});
      RETURN_IF_ERROR(options_.communicator->allreduce_sum(flag));
      found_inf = flag.data<double>()[0] > 0;
    }
    scaler_->update(found_inf);
    if (found_inf) {
      ++skipped_;
      r.skipped = true;
      r.step = ++steps_done_;
      r.lr = options_.optimizer.lr * lr_multiplier(options_.schedule, r.step, options_.steps, options_.optimizer.lr);
      spdlog::info("step {}: a gradient holds inf or NaN at loss scale {}: update skipped, scale now {}", r.step,
                   *r.loss_scale, scaler_->scale());
      r.step_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      return r;
    }
  }
  if (micro_batches > 1) {
    float inv = 1.f / static_cast<float>(micro_batches);
    for (const Tensor& t : all_here ? grads_ : shard_grads_) RETURN_IF_ERROR(math_->scale(t, inv));
  }
  // The norm is one more pass over every gradient: skipped when nobody reads it.
  // (Every rank takes the same branch: clipping is the run's setting, and
  // train asks for the norm at the same steps on every rank.)
  if (want_grad_norm || options_.optimizer.max_grad_norm) {
    if (all_here) {
      ASSIGN_OR_RETURN(r.grad_norm, math_->global_norm(grads_));
    } else {
      ASSIGN_OR_RETURN(double share, math_->global_norm(shard_grads_));
      Tensor sq = Tensor::from_vector<double>({1}, {share * share});
      RETURN_IF_ERROR(options_.communicator->allreduce_sum(sq));
      r.grad_norm = std::sqrt(sq.data<double>()[0]);
    }
  }
  if (options_.optimizer.max_grad_norm) {
    // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1.
    double coef = *options_.optimizer.max_grad_norm / (*r.grad_norm + 1e-6);
    if (coef < 1.0)
      for (const Tensor& t : mine) RETURN_IF_ERROR(math_->scale(t, static_cast<float>(coef)));
  }
  // The schedule counts steps, skipped ones too (PyTorch's scheduler steps every iteration).
  int64_t t = steps_done_ + 1;
  r.lr = options_.optimizer.lr * lr_multiplier(options_.schedule, t, options_.steps, options_.optimizer.lr);
  RETURN_IF_ERROR(optimizer_->step(mine, r.lr));
  // ZeRO: every rank gets the others' updated shares.
  if (zero_) RETURN_IF_ERROR(options_.communicator->allgather(store_->groups()[0].masters, shard_counts_));
  // The 16-bit parameters the graph reads, rounded from the updated masters.
  for (const ParameterStore::Group& grp : store_->groups())
    if (grp.has_masters()) RETURN_IF_ERROR(math_->convert(grp.masters, grp.params));
  // The hoisted weight copies, where the optimizer did not round them in its pass.
  if (zero_ || device_->kind() != DeviceKind::kCpu) RETURN_IF_ERROR(refresh_low_copies());
  r.step = ++steps_done_;
  r.step_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return r;
}

Status Trainer::reduce_over_ranks(StepReport& r, double& loss_sum) {
  // Sum the gradients over the ranks, one flat float32 buffer per dtype
  // group; the loss and counts ride along in one small reduction.
  auto reduce_started = std::chrono::steady_clock::now();
  Communicator& comm = *options_.communicator;
  RETURN_IF_ERROR(device_->synchronize());
  if (zero_) {
    // This rank's share of the sums (in deterministic mode the rank-ordered sum of everything).
    RETURN_IF_ERROR(comm.reduce_scatter_sum(store_->groups()[0].master_grads, shard_counts_));
  } else if (buckets_) {
    RETURN_IF_ERROR(buckets_->finish(reducer()).status());
  } else {
    for (const ParameterStore::Group& grp : store_->groups()) {
      // --allreduce-dtype bf16: a rounded copy travels (a buffer made once), and its sum comes back widened.
      Tensor wire = grp.master_grads;
      if (options_.allreduce_dtype == DType::kBFloat16) {
        Tensor& held = wire_grads_[grp.master_grads.raw()];
        if (!held.defined()) {
          ASSIGN_OR_RETURN(held, to_device(*device_, Tensor::host(DType::kBFloat16, grp.master_grads.dims())));
        }
        wire = held;
        RETURN_IF_ERROR(math_->convert(grp.master_grads, wire));
      }
      if (device_comm_) {  // NCCL, on the device's compute stream
        RETURN_IF_ERROR(device_comm_->allreduce_sum(wire));
      } else {  // the MPI backend reduces host buffers
        ASSIGN_OR_RETURN(Tensor host, to_host(*device_, wire));
        RETURN_IF_ERROR(comm.allreduce_sum(host));
        RETURN_IF_ERROR(device_->copy(host, wire));
      }
      if (wire.raw() != grp.master_grads.raw()) RETURN_IF_ERROR(math_->convert(wire, grp.master_grads));
    }
  }
  Tensor totals = Tensor::from_vector<double>({3}, {loss_sum, static_cast<double>(r.samples), static_cast<double>(r.tokens)});
  RETURN_IF_ERROR(comm.allreduce_sum(totals));
  loss_sum = totals.data<double>()[0];
  r.samples = static_cast<int64_t>(totals.data<double>()[1]);
  r.tokens = static_cast<int64_t>(totals.data<double>()[2]);
  r.allreduce_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - reduce_started).count();
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
  return parts;
}

Result<Checkpoint> Trainer::snapshot(const std::map<std::string, std::string>& fingerprint) const {
  Checkpoint c;
  c.step = steps_done_;
  c.micro_batch = base_ + micro_ * world_;  // micro-batches consumed by the whole job
  c.seed = options_.seed;
  c.fingerprint = fingerprint;
  auto add = [&](const std::string& key, const Tensor& t) -> Status {
    // On the CPU the snapshot shares the live buffers: it is written before the next step.
    ASSIGN_OR_RETURN(Tensor h, to_host(*device_, t));
    c.tensors.emplace_back(key, std::move(h));
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
  }
  for (const auto& [name, t] : optimizer_->state()) {
    if (!zero_ || !t->defined() || t->numel() == 0) {
      RETURN_IF_ERROR(add("state/" + name, *t));
      continue;
    }
    // ZeRO-1: the complete state, in zero 0's layout (every rank takes part; rank 0 writes it).
    Tensor full = Tensor::host(DType::kFloat, {state_total_});
    std::memcpy(full.data<float>() + state_offset_, t->raw(), t->nbytes());
    RETURN_IF_ERROR(options_.communicator->allgather(full, state_counts_));
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

Status Trainer::hoist_weight_casts() {
  // A Cast of a float32 trainable weight to 16 bits (autocast's, one per GEMM
  // that reads the weight) computes the same copy in every forward; its
  // output becomes an initializer instead, made here and refreshed once per
  // step after the update. The training graph a user saves keeps the Casts.
  Graph& g = tg_.model.graph;
  std::set<std::string> outputs;
  for (const ValueInfo& v : g.outputs) outputs.insert(v.name);
  ASSIGN_OR_RETURN(VectorOps * host_math, vector_ops(DeviceKind::kCpu));
  Status failed = Status::Ok();
  std::erase_if(g.nodes, [&](const Node& n) {
    if (!failed.ok() || n.op_type != "Cast" || !n.domain.empty() || n.inputs.size() != 1 || n.outputs.size() != 1 ||
        outputs.count(n.outputs[0]))
      return false;
    const ParameterStore::Entry* e = store_->find(n.inputs[0]);
    DType to = static_cast<DType>(n.attr_int("to", 0));
    if (!e || e->param.dtype() != DType::kFloat || !dtype_is_half(to)) return false;
    Tensor low = Tensor::host(to, e->param.dims());
    auto weight = to_host(*device_, e->param);
    failed = weight.ok() ? host_math->convert(*weight, low) : weight.status();
    g.initializers[n.outputs[0]] = low;
    g.initializer_order.push_back(n.outputs[0]);
    low_copies_[e->name].emplace_back(n.outputs[0], low);
    return true;
  });
  return failed;
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

Status Trainer::restore(const Checkpoint& c, const std::map<std::string, std::string>& fingerprint) {
  // Keys either side: a part one side lacks has its default ("precision" is
  // fp32 where it is not written), so checkpoints from before a key existed load.
  std::set<std::string> keys;
  for (const auto& [key, value] : fingerprint) keys.insert(key);
  for (const auto& [key, value] : c.fingerprint) keys.insert(key);
  keys.erase("precision");
  auto part = [](const std::map<std::string, std::string>& f, const std::string& key) -> std::string {
    auto it = f.find(key);
    return it != f.end() ? it->second : key == "precision" ? "fp32" : "(none)";
  };
  std::vector<std::string> order{"precision"};  // first: another precision also changes the model's hash
  order.insert(order.end(), keys.begin(), keys.end());
  for (const std::string& key : order) {
    std::string have = part(c.fingerprint, key), want = part(fingerprint, key);
    if (have != want)
      return invalid_argument("the checkpoint does not match this run: {} is '{}' in the checkpoint, '{}' here", key,
                              have, want);
  }
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
  std::map<std::string, Tensor> scaler_state;
  if (scaler_)
    for (const char* key : {"scaler/scale", "scaler/growth_tracker", "scaler/skipped_steps"}) targets[key] = Tensor();
  if (targets.size() != c.tensors.size())
    return invalid_argument("the checkpoint holds {} tensors, this run has {}", c.tensors.size(), targets.size());
  for (const auto& [name, t] : c.tensors) {
    auto it = targets.find(name);
    if (it == targets.end()) return invalid_argument("the checkpoint holds '{}', which this run does not have", name);
    const Tensor& dst = it->second;
    if (name.rfind("scaler/", 0) == 0) {
      DType want = name == "scaler/scale" ? DType::kFloat : DType::kInt64;
      if (t.dtype() != want || t.numel() != 1)
        return invalid_argument("the checkpoint's '{}' is {} {}, not one {}", name, dtype_name(t.dtype()),
                                dims_to_string(t.dims()), dtype_name(want));
      scaler_state[name] = t;
      continue;
    }
    if (zero_ && name.rfind("state/", 0) == 0 && dst.numel() > 0 && t.dtype() == DType::kFloat &&
        t.numel() == state_total_) {
      // ZeRO-1: this rank's part of the complete state.
      std::memcpy(dst.raw(), t.data<float>() + state_offset_, dst.nbytes());
      continue;
    }
    if (dst.dims() != t.dims() || dst.dtype() != t.dtype())
      return invalid_argument("the checkpoint's '{}' has another shape or dtype", name);
    RETURN_IF_ERROR(device_->copy(t, dst));  // in place: the executor and optimizer read these buffers
  }
  RETURN_IF_ERROR(refresh_low_copies());  // from the restored weights
  RETURN_IF_ERROR(device_->synchronize());
  if (scaler_) {
    skipped = scaler_state.at("scaler/skipped_steps").data<int64_t>()[0];
    if (skipped < 0 || skipped > c.step)
      return invalid_argument("the checkpoint says {} of its {} steps were skipped", skipped, c.step);
    scaler_->restore(scaler_state.at("scaler/scale").data<float>()[0],
                     scaler_state.at("scaler/growth_tracker").data<int64_t>()[0]);
  }
  skipped_ = skipped;
  steps_done_ = c.step;
  optimizer_->set_steps_taken(c.step - skipped);
  base_ = c.micro_batch;  // any world size continues from the job's position
  micro_ = 0;
  return Status::Ok();
}

Result<EvalReport> Trainer::evaluate(const BatchSource& source, int64_t batches) {
  const LossSpec& spec = tg_.loss;
  bool classify = spec.type == "softmax_cross_entropy" || spec.type == "nll";
  if (!eval_executor_) {
    // The nodes the loss (and the logits) need, found by reachability; the
    // tensors share storage, so it sees the trained values.
    std::vector<std::string> outputs{tg_.gradients.loss};
    if (classify) outputs.push_back(spec.input);
    ASSIGN_OR_RETURN(Model fwd, extract_subgraph(tg_.model, outputs));
    ASSIGN_OR_RETURN(eval_executor_, Executor::create(fwd, device_, executor_.get()));
    eval_executor_->forget_host_copies(updated_initializers());
  }
  EvalReport r;
  int64_t correct = 0, counted = 0;
  for (int64_t b = 0; b < batches; ++b) {
    ASSIGN_OR_RETURN(auto feeds, source(b));
    RunOptions run;  // not a training run: Dropout is the identity
    ASSIGN_OR_RETURN(auto out, eval_executor_->run(feeds, run));
    ASSIGN_OR_RETURN(double loss, read_loss(out.at(tg_.gradients.loss)));
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
