// ZeRO (Rajbhandari et al. 2020, --zero 1|2) in one object: each rank of N
// keeps the optimizer state of 1/N of the flat parameter buffer (its share,
// ParameterStore::Shard) and updates only that share, then the ranks
// all-gather the updated shares. Stage 2 also keeps only the share's
// gradients.
//
// This object owns everything about the share that the trainer asks:
//   - the layout, made once (share boundaries on the norm's chunks for stage 2);
//   - the optimizer's slots over the share, and LAMB's per-tensor norms summed
//     over the ranks (a tensor may be cut between two shares);
//   - the gradient norm over the shares (stage 2's equal to zero 0's to the bit);
//   - the all-gather of the updated shares after each update;
//   - the optimizer state in checkpoints: gathered into zero 0's layout to be
//     written, and only this rank's part read back on resume, so a checkpoint
//     moves between any ZeRO stage and world size.
// The reduce-scatter into the share is the gradient reducer's (ZeRO-1 through
// GradientBuckets, ZeRO-2 through ShardedGradients), given shard().
#pragma once
#include <memory>
#include <vector>

#include "optimizers/optimizer.h"
#include "runtime/communicator.h"
#include "runtime/parameter_store.h"
#include "runtime/vector_ops.h"
#include "training/checkpoint.h"

namespace ort_train {

class ZeroSharding {
 public:
  // Whether `stage` over `world` ranks shards anything (stage 0, or one rank: no).
  static bool active(int stage, int world) { return stage >= 1 && world > 1; }
  // Whether the store keeps whole gradients: not under stage 2 (each rank's
  // share has its own buffer, Shard::grads).
  static bool store_keeps_whole_gradients(int stage, int world) { return !(stage == 2 && world > 1); }
  // The share of `comm`'s rank. An error for a stage other than 1 or 2, or a
  // device other than the CPU (the GPU optimizers take no shard-wide norms yet).
  static Result<std::unique_ptr<ZeroSharding>> create(const ParameterStore& store, int stage,
                                                      std::shared_ptr<Communicator> comm, DeviceKind device);

  int stage() const { return stage_; }
  const ParameterStore::Shard& shard() const { return shard_; }
  // The optimizer's parameters: this rank's parts of the float32 masters.
  std::vector<ParamSlot> optimizer_slots() const;
  // LAMB's trust ratios need each tensor's whole ||w||² and ||r||²: the
  // optimizer's per-slot partial sums, added per tensor over the ranks.
  Optimizer::NormReducer lamb_norms();
  // The summed gradients of this rank's share (what the optimizer reads).
  const std::vector<Tensor>& gradients() const { return grads_; }
  // Whether every rank holds every summed gradient anyway (ZeRO-1 with
  // ordered sums, --deterministic), so the norm and the checks read them
  // whole and ZeRO-1 equals zero 0 to the bit.
  bool every_gradient_here() const;
  // The norm of the summed gradients from the shares: stage 2's equal to
  // zero 0's bit for bit (fixed chunks, summed in order); stage 1's the
  // shares' norms added over the ranks.
  Result<double> gradient_norm(VectorOps& math);
  // After the update: every rank gets the others' updated shares.
  Status gather_parameters();
  // One optimizer-state tensor of this rank's share, as the whole of zero 0's
  // layout (a collective: every rank calls it, rank 0 writes it).
  Result<Tensor> gather_state(const Tensor& share) const;
  // Reads entry `i` of `c` into `share` when it is a whole state tensor
  // (zero 0's layout): true if it was, false to read it as any other tensor.
  Result<bool> read_state_share(const CheckpointReader& c, size_t i, const Tensor& share) const;
  // Gradient memory of the share's own buffer (stage 2), else 0.
  size_t gradient_bytes() const { return shard_.grads.defined() ? shard_.grads.nbytes() : 0; }

 private:
  ZeroSharding() = default;
  const ParameterStore* store_ = nullptr;
  int stage_ = 0;
  std::shared_ptr<Communicator> comm_;
  ParameterStore::Shard shard_;
  std::vector<Tensor> grads_;  // each part's float32 gradient view
};

}  // namespace ort_train
