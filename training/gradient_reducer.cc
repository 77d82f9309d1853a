#include "training/gradient_reducer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "runtime/host_staged_communicator.h"

namespace ort_train {

Result<std::unique_ptr<GradientReducer>> GradientReducer::create(const ParameterStore& store, const GradientGraph& gg,
                                                                 const Executor& executor,
                                                                 std::shared_ptr<Communicator> job,
                                                                 std::shared_ptr<Device> device,
                                                                 const ReducerOptions& options) {
  std::unique_ptr<GradientReducer> r(new GradientReducer());
  r->job_ = job;
  r->device_ = device;
  r->sums_ = job;  // NCCL or host staging replace it on a GPU (ZeRO runs on the CPU)
  if (options.zero) {
    if (options.wire != DType::kFloat)
      return unsupported("--allreduce-dtype bf16 with --zero {}: ZeRO reduce-scatters float32 gradients so far",
                         options.zero->stage());
    if (options.zero->stage() == 2) {
      ASSIGN_OR_RETURN(r->sharded_, ShardedGradients::create(store, options.zero->shard(), job->rank(), gg, executor,
                                                             std::max<size_t>(options.bucket_bytes, 1), job));
      return r;
    }
    // ZeRO-1: the buckets, reduce-scattered into each rank's range.
    ASSIGN_OR_RETURN(r->buckets_, GradientBuckets::create(store, gg, options.bucket_bytes, DType::kFloat, *device,
                                                          &options.zero->shard()));
    return r;
  }
  size_t bucket_bytes = options.bucket_bytes;
  if (device->kind() == DeviceKind::kCuda) {
    // The device's own collectives (NCCL) reduce the gradients on the GPU;
    // without them they go through host memory over MPI, after the whole
    // backward. On the trainer's own GPU (--device cuda:N, else the
    // launcher's local rank, as choose_device decided).
    auto on_device = device_communicator(device->kind(), job, device->index());
    if (on_device.ok()) {
      r->sums_ = *on_device;
    } else {
      spdlog::warn("GPU gradients are reduced through host memory: {}", on_device.status().message());
      r->sums_ = host_staged(job, device);
      bucket_bytes = 0;
    }
  }
  ASSIGN_OR_RETURN(r->buckets_, GradientBuckets::create(store, gg, bucket_bytes, options.wire, *device));
  return r;
}

void GradientReducer::prepare(RunOptions& run, int64_t index, int64_t count) {
  if (sharded_) {
    sharded_->begin(index == 0);
    run.on_output_ready = [this](const std::string& name, const Tensor& t) {
      return sharded_->gradient_ready(name, t);
    };
    run.release_outputs = true;
    return;
  }
  if (!buckets_ || buckets_->buckets() == 0 || index + 1 != count) return;
  buckets_->begin();
  run.on_output_ready = [this](const std::string& name, const Tensor&) { return buckets_->gradient_ready(name, *sums_); };
}

Status GradientReducer::after_run(const Executor& executor) {
  return sharded_ ? sharded_->finish(executor) : Status::Ok();
}

Result<double> GradientReducer::reduce(StepTotals& totals) {
  auto started = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(device_->synchronize());
  if (sharded_) {
    // ZeRO-2: summed micro-batch by micro-batch, during the backward.
  } else {
    // ZeRO-1 leaves this rank's share of the sums (in deterministic mode the
    // rank-ordered sum of everything); otherwise every rank has every sum.
    RETURN_IF_ERROR(buckets_->finish(*sums_).status());
  }
  // The loss and counts ride along in one small reduction.
  Tensor t = Tensor::from_vector<double>(
      {3}, {totals.loss_sum, static_cast<double>(totals.samples), static_cast<double>(totals.tokens)});
  RETURN_IF_ERROR(job_->allreduce_sum(t));
  totals.loss_sum = t.data<double>()[0];
  totals.samples = static_cast<int64_t>(t.data<double>()[1]);
  totals.tokens = static_cast<int64_t>(t.data<double>()[2]);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace ort_train
