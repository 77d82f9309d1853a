// Data parallelism: the sum over the ranks of a step's gradients, and with
// them of its loss and sample and token counts. One of three ways, chosen
// once when the trainer is made:
//   - ZeRO-1: the one float32 gradient buffer is reduce-scattered; each rank
//     keeps the sum of its share (ParameterStore::Shard);
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
#include "training/gradient_buckets.h"

namespace ort_train {

struct ReducerOptions {
  size_t bucket_bytes = size_t{25} << 20;
  DType wire = DType::kFloat;                  // float32, or bfloat16
  const ParameterStore::Shard* zero = nullptr;  // ZeRO-1's layout, when on
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
  static Result<std::unique_ptr<GradientReducer>> create(const ParameterStore& store, const GradientGraph& gg,
                                                         std::shared_ptr<Communicator> job,
                                                         std::shared_ptr<Device> device, const ReducerOptions& options);
  // For the step's last micro-batch: RunOptions::on_output_ready, which starts
  // each bucket's reduction as its gradients become final; empty when nothing
  // overlaps the backward.
  std::function<Status(const std::string&, const Tensor&)> overlap_backward();
  // After the backward: sums the gradients and `totals` over the ranks;
  // returns the milliseconds it waited.
  Result<double> reduce(StepTotals& totals);

 private:
  GradientReducer() = default;
  std::shared_ptr<Communicator> job_;      // the job's (MPI, or one process)
  std::shared_ptr<Communicator> sums_;     // who sums gradient buffers: NCCL, host-staged MPI, or MPI
  std::shared_ptr<Device> device_;
  std::unique_ptr<GradientBuckets> buckets_;  // null under ZeRO
  const ParameterStore* store_ = nullptr;
  const ParameterStore::Shard* zero_ = nullptr;
};

}  // namespace ort_train
