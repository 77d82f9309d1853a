// ZeRO-2's gradients (--zero 2): no rank keeps a whole gradient. As the
// backward makes each gradient final (RunOptions::on_output_ready, every
// micro-batch), it is cut at the ranks' share boundaries
// (ParameterStore::Shard) and its pieces are packed into a bucket, each
// beside the other pieces of the rank that owns it. When a bucket's last
// gradient has arrived, one reduce-scatter leaves every rank the sum over the
// ranks of its own pieces, which it writes (a step's first micro-batch) or
// adds (the others) into its share's gradient buffer. The executor frees
// each gradient once it is packed (RunOptions::release_outputs), so a rank
// holds its share, one bucket and the gradients the backward is still using.
//
// Buckets follow the order the plan makes gradients final, which every rank
// shares; an element is summed over the ranks exactly as zero 0's allreduce
// sums it, so with one micro-batch per step the shares are zero 0's
// gradients to the bit (--deterministic sums in rank order either way).
// Several micro-batches are summed over the ranks one at a time, then added
// (as DeepSpeed's ZeRO-2 and PyTorch FSDP do), where zero 0 adds them on each
// rank first: equal within rounding, not to the bit.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "autodiff/training_graph.h"
#include "runtime/communicator.h"
#include "runtime/executor.h"
#include "runtime/parameter_store.h"
#include "runtime/vector_ops.h"

namespace ort_train {

class ShardedGradients {
 public:
  // `shard` is this rank's (with its own gradient buffer, Shard::grads);
  // buckets hold about `bucket_bytes` of float32 gradients each.
  static Result<std::unique_ptr<ShardedGradients>> create(const ParameterStore& store,
                                                          const ParameterStore::Shard& shard, int rank,
                                                          const GradientGraph& gg, const Executor& executor,
                                                          size_t bucket_bytes, std::shared_ptr<Communicator> comm);
  // Before each micro-batch: true for a step's first (the shares are written), false after (added).
  void begin(bool first);
  // RunOptions::on_output_ready.
  Status gradient_ready(const std::string& name, const Tensor& value);
  // After the run: the gradients no node makes (constant ones, read from
  // `executor`), and the check that every bucket was summed.
  Status finish(const Executor& executor);
  // The bucket buffer's bytes (the share's are Shard::grads.nbytes()).
  size_t buffer_bytes() const { return buffer_.nbytes(); }
  size_t buckets() const { return buckets_.size(); }

 private:
  ShardedGradients() = default;
  struct Piece {
    int64_t from = 0, to = 0, count = 0;  // elements
  };
  struct Bucket {
    std::vector<int64_t> counts;  // elements per rank, packed rank after rank
    std::vector<Piece> unpack;    // this rank's pieces: bucket buffer -> share
    size_t members = 0, arrived = 0;
  };
  struct Member {
    size_t bucket = 0;
    int64_t numel = 0;
    std::vector<Piece> pack;  // gradient -> bucket buffer
  };
  Status reduce(Bucket& b);
  std::vector<Bucket> buckets_;
  std::map<std::string, Member> members_;   // gradient output -> where its pieces go
  std::vector<std::string> unmade_;         // gradient outputs no node makes
  Tensor buffer_;                           // float32, the largest bucket
  Tensor share_;                            // Shard::grads
  std::shared_ptr<Communicator> comm_;
  VectorOps* math_ = nullptr;               // the CPU's: widening 16-bit gradients, adding micro-batches
  bool first_ = true;
};

}  // namespace ort_train
