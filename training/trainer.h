// The training loop's step: micro-batches through the training graph,
// gradients averaged over them, clipped, and handed to the optimizer with the
// scheduled learning rate. BatchNormalization running statistics computed by
// the graph are written over their initializers by each micro-batch's run.
#pragma once
#include <deque>
#include <functional>
#include <mutex>
#include <future>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "autodiff/training_graph.h"
#include "training/backward_norm.h"
#include "training/batch_source.h"
#include "optimizers/optimizer.h"
#include "training/checkpoint.h"
#include "training/gradient_reducer.h"
#include "training/loss_scaler.h"
#include "training/step_graph.h"
#include "training/zero_sharding.h"
#include "runtime/communicator.h"
#include "runtime/executor.h"
#include "runtime/parameter_store.h"
#include "runtime/vector_ops.h"

namespace ort_train {

struct TrainerOptions {
  OptimizerSettings optimizer;
  ScheduleConfig schedule;
  int64_t steps = 1;
  int64_t grad_accum = 1;
  uint64_t seed = 0;
  std::shared_ptr<Device> device;  // where the step runs; null: the CPU
  // Data parallelism: this rank reads micro-batches rank, rank + N, ... of the
  // sequence one process would read, and the ranks sum their gradients, so N
  // ranks with grad_accum k step like one with grad_accum N*k. Null: one process.
  std::shared_ptr<Communicator> communicator;
  // Gradient bucket size for the allreduce that overlaps the backward (CPU
  // training; 0: reduce everything after the backward).
  size_t bucket_bytes = size_t{25} << 20;
  // ZeRO stage 1 (--zero 1): each rank keeps the optimizer state of 1/N of
  // the flat parameter buffer; gradients are reduce-scattered, each rank
  // updates its share, and the parameters are all-gathered. Stage 2 also
  // keeps only the share's gradients (training/sharded_gradients.h).
  int zero_stage = 0;
  // The dtype gradients are summed over the ranks in: float32, or bfloat16
  // (--allreduce-dtype bf16: rounded, summed, widened back; half the bytes).
  DType allreduce_dtype = DType::kFloat;
  // --precision fp16 (a training graph with a loss_scale input): GradScaler's settings.
  LossScaleConfig loss_scale;
  // A step whose gradients hold inf or NaN under a finite loss (outside fp16's
  // loss scaling, which skips such steps itself): false (--on-nonfinite stop)
  // ends the run with an error naming the first such gradient before the
  // update; true (skip) skips the update, as GradScaler does.
  bool skip_nonfinite = false;
  // Micro-batches read (and, on a GPU, staged) ahead on background threads,
  // one thread each, while the step runs (--prefetch); 0: read on the step's thread.
  int prefetch = 1;
};

struct StepReport {
  int64_t step = 0;       // steps taken, 1-based (fp16: skipped ones included, as PyTorch's loop counts them)
  double loss = 0;        // mean over the step's micro-batches (of every rank), before the update
  double lr = 0;
  // Global L2 norm of the averaged gradients, before clipping: computed when
  // clipping needs it or the caller asked for it (Trainer::step).
  std::optional<double> grad_norm;
  double step_ms = 0;
  int64_t samples = 0;    // leading dim of the first input, summed over micro-batches and ranks
  double data_ms = 0;     // time the step waited for its micro-batches (read, assembled, staged)
  double allreduce_ms = 0;  // data parallelism: time the step waited for the gradient allreduce after the backward
  double update_ms = 0;     // from the summed gradients to the updated weights: the norm and the optimizer's pass
  int64_t tokens = 0;     // elements of the first integer input with rank >= 2, summed
  // --precision fp16: the scale this step's backward started from, and
  // whether its gradients held an inf or NaN, so the update was skipped.
  std::optional<float> loss_scale;
  bool skipped = false;
};

// What a checkpoint must match: the model's structure (ops, node names,
// initializer names and shapes), the trainable set, the loss and optimizer.
std::map<std::string, std::string> training_fingerprint(const TrainingGraph& tg, const TrainerOptions& options);

struct EvalReport {
  int64_t batches = 0;
  double loss = 0;                  // mean over batches
  std::optional<double> accuracy;   // classification losses: argmax over the class axis vs the labels
};

class Trainer {
 public:
  static Result<std::unique_ptr<Trainer>> create(TrainingGraph tg, TrainerOptions options, BatchSource source);
  // The same, executing `step`, which the caller built from `tg` with
  // build_step_graph (and may have saved or estimated): that very graph runs,
  // and it is not built twice.
  static Result<std::unique_ptr<Trainer>> create(TrainingGraph tg, StepGraph step, TrainerOptions options,
                                                 BatchSource source);
  // One optimizer step. The gradient norm is taken every step: it is the
  // check that no gradient holds inf or NaN before the update.
  Result<StepReport> step();
  // Forward and loss only (no gradients, no updates) over `batches` micro-batches of `source`.
  Result<EvalReport> evaluate(const BatchSource& source, int64_t batches);
  // Whether the first `batches` micro-batches of `source` are data evaluate()
  // can run: the evaluation graph's inputs, dtypes and shapes, and token ids
  // inside the tables they index (training/index_bounds.h). Reads the data,
  // runs nothing: called before step 1 for the held-out data.
  Status check_evaluation_data(const BatchSource& source, int64_t batches) const;
  // Everything needed to continue exactly, with `fingerprint` to check on load.
  // `detached`: every tensor a copy, so it stays as it is while training goes
  // on (a checkpoint written in the background); else the CPU's shares the live
  // buffers and must be written before the next step.
  Result<Checkpoint> snapshot(const std::map<std::string, std::string>& fingerprint, bool detached = false) const;
  // Loads a snapshot of this run; a different fingerprint or tensor set is an
  // error saying what differs.
  Status restore(const CheckpointReader& c, const std::map<std::string, std::string>& fingerprint);
  // Copies the trained parameters and running statistics from the device
  // into graph().model's initializers (a no-op on the CPU, where they are the same).
  Status sync_to_host();
  // Steps taken: optimizer updates plus the steps fp16's loss scaling skipped.
  int64_t steps_done() const { return steps_done_; }
  // How many times the loss was read to the host: once per step, whatever --grad-accum is.
  int64_t loss_reads() const { return loss_reads_; }
  const TrainingGraph& graph() const { return tg_; }
  Device& device() const { return *device_; }
  Optimizer& optimizer() { return *optimizer_; }
  Executor& executor() { return *executor_; }
  const ParameterStore& parameters() const { return *store_; }
  // Gradient memory this rank keeps between runs: the store's gradient
  // buffers, or under ZeRO-2 its share's and the reduce-scatter's bucket.
  size_t gradient_bytes() const;
  size_t gradient_share_bytes() const { return zero_ ? zero_->gradient_bytes() : 0; }

 private:
  Trainer() = default;
  // Trainer::create, in order.
  Status make_store();
  Status make_executor(StepGraph step);
  Status make_optimizer();
  // Trainer::step, in order.
  Status forward_backward(StepTotals& totals);
  Result<std::map<std::string, Tensor>> next_micro_batch();
  Result<double> summed_gradient_norm();
  // The norm, and the step's one gradient factor; sets r.skipped on an fp16 overflow.
  Result<float> gradient_scale(StepReport& r);
  Status nonfinite_gradients(StepReport& r);
  void skip_update(StepReport& r);  // counts the step, takes no update
  Status update(StepReport& r, float grad_scale);
  bool all_gradients_here() const;
  // The initializers each step changes: trainable parameters, BatchNorm
  // running statistics and the hoisted 16-bit weight copies.
  std::vector<std::string> updated_initializers() const;
  // --precision: the step graph's hoisted 16-bit weight copies (low_copies_),
  // refreshed after each update instead of cast every forward.
  Status refresh_low_copies();  // every copy from its weight's float32 master
  // weight -> (initializer name, tensor the executor reads) per hoisted Cast
  std::map<std::string, std::vector<std::pair<std::string, Tensor>>> low_copies_;
  TrainingGraph tg_;
  TrainerOptions options_;
  BatchSource source_;
  std::shared_ptr<Device> device_;
  VectorOps* math_ = nullptr;  // the device's vector arithmetic (accumulate, scale, norm)
  std::unique_ptr<ParameterStore> store_;        // trainable tensors and their gradient slots, flat per dtype
  std::vector<Tensor> grads_;                      // the store's float32 (master) gradient views, in trainable order
  std::map<std::string, Tensor> originals_;        // the caller's initializer tensors, for sync_to_host
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Executor> eval_executor_;  // the forward + loss part, built on first use
  std::vector<std::pair<std::string, std::string>> stat_writebacks_;  // graph output -> initializer
  std::optional<LossScaler> scaler_;  // --precision fp16
  int64_t steps_done_ = 0;  // steps taken (the schedule's and the log's count)
  // Each micro-batch's loss, copied on the device as the run made it (a GPU
  // run's outputs may reuse one address), read once per step.
  std::vector<Tensor> loss_slots_;
  int64_t loss_reads_ = 0;
  int64_t skipped_ = 0;     // of which fp16 skipped (the optimizer's own count is the difference)
  int64_t micro_ = 0;  // this rank's micro-batches since the run started (or resumed)
  int64_t base_ = 0;   // micro-batches the whole job had consumed when it resumed
  int rank_ = 0, world_ = 1;
  std::unique_ptr<GradientReducer> reducer_;  // data parallelism: the sums over the ranks
  std::optional<BackwardNorm> backward_norm_;  // the norm read during the backward, where it can be
  std::unique_ptr<ZeroSharding> zero_;  // --zero 1|2 over more than one rank: this rank's share
  // The source index of this rank's m-th micro-batch: base + m * world + rank,
  // so a checkpoint written at one world size resumes at any other.
  int64_t source_index(int64_t m) const { return base_ + m * world_ + rank_; }
  // Micro-batches being loaded on other threads, by source index, in order.
  std::deque<std::pair<int64_t, std::future<Result<std::map<std::string, Tensor>>>>> ahead_;
  std::shared_ptr<std::mutex> staging_ = std::make_shared<std::mutex>();  // one upload at a time, as before --prefetch
  double data_ms_ = 0;  // waited for micro-batches during this step
};

}  // namespace ort_train
