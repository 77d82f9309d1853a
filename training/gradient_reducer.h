// Data parallelism: the sum over the ranks of a step's gradients, and with
// them of its loss and sample and token counts. One of four ways, chosen
// once when the trainer is made:
//   - ZeRO-2: each micro-batch's gradients are reduce-scattered bucket by
//     bucket as the backward makes them final, into the rank's share; no
//     rank keeps them whole (ShardedGradients);
//   - ZeRO-1: the buckets below, each reduce-scattered as it becomes final;
//     each rank keeps the sum of its share (ParameterStore::Shard);
//   - buckets (GradientBuckets): each bucket's allreduce starts as its last
//     gradient becomes final, overlapping the backward (MPI on the CPU, NCCL
//     on GPUs that have it);
//   - GPUs without NCCL: every buffer after the backward, through host memory
//     (host_staged over the job's communicator).
// --allreduce-dtype bf16 rounds what travels (the buckets' wire copies).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "autodiff/training_graph.h"
#include "runtime/communicator.h"
#include "runtime/device.h"
#include "runtime/parameter_store.h"
#include "runtime/executor.h"
#include "training/gradient_buckets.h"
#include "training/sharded_gradients.h"
#include "training/zero_sharding.h"

namespace ort_train {

struct ReducerOptions {
  size_t bucket_bytes = size_t{25} << 20;
  DType wire = DType::kFloat;                  // float32, or bfloat16
  const ZeroSharding* zero = nullptr;  // --zero 1|2: the reduce-scatter fills its share
};

// What the micro-batches of a step add up to, on this rank or, after
// reduce(), over every rank.
struct StepTotals {
  double loss_sum = 0;
  int64_t samples = 0;
  int64_t tokens = 0;
};

class GradientReducer {
 public:
  // `executor` runs the step graph (ZeRO-2 buckets gradients in its order).
  static Result<std::unique_ptr<GradientReducer>> create(const ParameterStore& store, const GradientGraph& gg,
                                                         const Executor& executor, std::shared_ptr<Communicator> job,
                                                         std::shared_ptr<Device> device, const ReducerOptions& options);
  // Sets micro-batch `index` (of `count` in the step)'s run options: ZeRO-2
  // takes every micro-batch's gradients as they become final (and has the
  // executor free them); the buckets start reducing the last one's.
  void prepare(RunOptions& run, int64_t index, int64_t count);
  // After each micro-batch's run.
  Status after_run(const Executor& executor);
  // After the backward: sums the gradients and `totals` over the ranks;
  // returns the milliseconds it waited.
  Result<double> reduce(StepTotals& totals);
  // Bytes of gradient memory the reducer holds beside the store's (ZeRO-2's bucket).
  size_t buffer_bytes() const { return sharded_ ? sharded_->buffer_bytes() : 0; }

 private:
  GradientReducer() = default;
  std::shared_ptr<Communicator> job_;      // the job's (MPI, or one process)
  std::shared_ptr<Communicator> sums_;     // who sums gradient buffers: NCCL, host-staged MPI, or MPI
  std::shared_ptr<Device> device_;
  std::unique_ptr<GradientBuckets> buckets_;  // null under ZeRO-2
  std::unique_ptr<ShardedGradients> sharded_;  // ZeRO-2
};

}  // namespace ort_train
