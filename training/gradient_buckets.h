// Data parallelism's gradient buckets: contiguous runs of the parameter
// store's float32 gradient buffers, about `bucket_bytes` each, whose
// allreduce starts as soon as every gradient in them is final on the step's
// last micro-batch, while the backward pass goes on (the design of PyTorch
// DDP's reducer). The store follows the model's order and the backward makes
// gradients final roughly in reverse, so buckets are cut from the end of each
// buffer. 16-bit groups are summed into their float32 master gradients only
// after the run, so theirs are reduced then. With a bfloat16 wire type
// (--allreduce-dtype bf16) each bucket is rounded into a bfloat16 copy, that
// copy is summed over the ranks, and the sum is widened back.
//
// Under ZeRO-1 (a shard layout given) each bucket is reduce-scattered
// instead: a bucket is a contiguous run of the buffer, so its elements fall
// in consecutive ranks' ranges, and each rank receives the sum of the part
// in its own range. Reduced bucket by bucket during the backward rather than
// in one call after it, the library's temporaries are bucket-sized: one
// MPI_Reduce_scatter of a 192 MiB buffer had Open MPI's ring algorithm hold
// a copy of all of it and two of a rank's block, and ZeRO-1 peaked above
// ZeRO-0 (997 against 901 MiB per rank at 2 ranks).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autodiff/training_graph.h"
#include "runtime/communicator.h"
#include "runtime/parameter_store.h"
#include "runtime/vector_ops.h"

namespace ort_train {

class GradientBuckets {
 public:
  // bucket_bytes 0: no overlap, every buffer reduced after the run. `wire`:
  // kFloat, or kBFloat16 (copies made on `device`, converted by its vector ops).
  // `zero`: ZeRO-1's layout of the store's one buffer, whose buckets are
  // then reduce-scattered (float32 wire only).
  static Result<std::unique_ptr<GradientBuckets>> create(const ParameterStore& store, const GradientGraph& gg,
                                                         size_t bucket_bytes, DType wire, Device& device,
                                                         const ParameterStore::Shard* zero = nullptr);
  size_t buckets() const { return buckets_.size(); }
  // Before the step's last micro-batch.
  void begin();
  // RunOptions::on_output_ready: counts the gradient in, starts its bucket's
  // allreduce when it was the last one, and lets MPI progress the others.
  Status gradient_ready(const std::string& name, Communicator& comm);
  // After the run: starts what has not started, waits for everything; the
  // milliseconds spent here (communication the backward did not hide).
  Result<double> finish(Communicator& comm);

 private:
  GradientBuckets() = default;
  struct Bucket {
    Tensor slice;  // float32 view of part of a group's gradient buffer
    Tensor wire;   // its bfloat16 copy, with --allreduce-dtype bf16 (else undefined)
    std::vector<int64_t> counts;  // ZeRO-1: its elements in each rank's range (else empty: an allreduce)
    size_t members = 0, arrived = 0;
    std::unique_ptr<CommRequest> request;
  };
  std::vector<Bucket> buckets_;
  std::map<std::string, size_t> bucket_of_;  // gradient output -> bucket
  std::vector<Bucket> after_run_;            // reduced whole after the run
  VectorOps* math_ = nullptr;                // the device's conversions, for a bfloat16 wire
  Status start(Bucket& b, Communicator& comm);
  Status land(Bucket& b);                    // the bfloat16 sum widened back into the slice
};

}  // namespace ort_train
