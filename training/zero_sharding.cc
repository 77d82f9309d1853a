#include "training/zero_sharding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ort_train {

Result<std::unique_ptr<ZeroSharding>> ZeroSharding::create(const ParameterStore& store, int stage,
                                                           std::shared_ptr<Communicator> comm, DeviceKind device) {
  if (stage < 1 || stage > 2) return invalid_argument("--zero {}: stages 0, 1 and 2 exist", stage);
  if (!comm || comm->size() < 2) return invalid_argument("ZeRO needs more than one rank");
  if (device != DeviceKind::kCpu)
    return unsupported("--zero {} runs on the CPU so far (the GPU optimizers take no shard-wide LAMB norms and "
                       "checkpoints do not gather device shards yet); use --zero 0 on GPUs",
                       stage);
  std::unique_ptr<ZeroSharding> z(new ZeroSharding());
  z->store_ = &store;
  z->stage_ = stage;
  z->comm_ = std::move(comm);
  // Stage 2's share boundaries fall on the norm's chunks (gradient_norm).
  ASSIGN_OR_RETURN(z->shard_, store.shard(z->comm_->rank(), z->comm_->size(), stage == 2 ? kNormChunk : 1));
  for (const ParameterStore::Shard::Part& part : z->shard_.parts) z->grads_.push_back(part.master_grad);
  return z;
}

std::vector<ParamSlot> ZeroSharding::optimizer_slots() const {
  std::vector<ParamSlot> slots;
  for (const ParameterStore::Shard::Part& part : shard_.parts)
    slots.push_back(ParamSlot{store_->entries()[part.entry].name, part.master, true, {}});
  return slots;
}

Optimizer::NormReducer ZeroSharding::lamb_norms() {
  return [this](std::vector<double>& w_sq, std::vector<double>& r_sq) -> Status {
    const size_t tensors = store_->entries().size();
    Tensor sums = Tensor::host(DType::kDouble, {static_cast<int64_t>(2 * tensors)});
    double* s = sums.data<double>();
    std::fill(s, s + sums.numel(), 0.0);
    for (size_t j = 0; j < w_sq.size(); ++j) {
      s[2 * shard_.parts[j].entry] += w_sq[j];
      s[2 * shard_.parts[j].entry + 1] += r_sq[j];
    }
    RETURN_IF_ERROR(comm_->allreduce_sum(sums));
    for (size_t j = 0; j < w_sq.size(); ++j) {
      w_sq[j] = s[2 * shard_.parts[j].entry];
      r_sq[j] = s[2 * shard_.parts[j].entry + 1];
    }
    return Status::Ok();
  };
}

bool ZeroSharding::every_gradient_here() const { return stage_ == 1 && comm_->ordered_sums(); }

// Stage 2, zero 0's norm to the bit: global_norm adds partial sums of fixed
// chunks of each tensor in order, and the share boundaries fall on chunk
// boundaries, so each chunk is whole on one rank. Each rank puts its chunks'
// sums in their places among every chunk's, zeros elsewhere, the ranks sum
// that (adding zeros is exact), and the sums are added in order.
Result<double> ZeroSharding::gradient_norm(VectorOps& math) {
  if (stage_ == 1) {
    ASSIGN_OR_RETURN(double share, math.global_norm(grads_));
    Tensor sq = Tensor::from_vector<double>({1}, {share * share});
    RETURN_IF_ERROR(comm_->allreduce_sum(sq));
    return std::sqrt(sq.data<double>()[0]);
  }
  std::vector<int64_t> chunk_base;  // each tensor's first chunk among all
  int64_t chunks = 0;
  for (const ParameterStore::Entry& e : store_->entries()) {
    chunk_base.push_back(chunks);
    chunks += (e.param.numel() + kNormChunk - 1) / kNormChunk;
  }
  ASSIGN_OR_RETURN(std::vector<double> mine, math.norm_partials(grads_));
  Tensor all = Tensor::host(DType::kDouble, {std::max<int64_t>(chunks, 1)});
  double* a = all.data<double>();
  std::fill(a, a + all.numel(), 0.0);
  size_t k = 0;
  for (const ParameterStore::Shard::Part& part : shard_.parts) {
    const int64_t first = chunk_base[part.entry] + part.begin / kNormChunk;
    for (int64_t c = 0; c < (part.master_grad.numel() + kNormChunk - 1) / kNormChunk; ++c) a[first + c] = mine[k++];
  }
  RETURN_IF_ERROR(comm_->allreduce_sum(all));
  double sq = 0;
  for (int64_t c = 0; c < chunks; ++c) sq += a[c];
  return std::sqrt(sq);
}

Status ZeroSharding::gather_parameters() {
  return comm_->allgather(store_->groups()[0].masters, shard_.counts);
}

Result<Tensor> ZeroSharding::gather_state(const Tensor& share) const {
  Tensor full = Tensor::host(DType::kFloat, {shard_.state_total});
  std::memcpy(full.data<float>() + shard_.state_offset, share.raw(), share.nbytes());
  RETURN_IF_ERROR(comm_->allgather(full, shard_.state_counts));
  return full;
}

Result<bool> ZeroSharding::read_state_share(const CheckpointReader& c, size_t i, const Tensor& share) const {
  const CheckpointReader::Entry& e = c.entries()[i];
  if (share.numel() == 0 || e.dtype != DType::kFloat ||
      e.bytes != static_cast<uint64_t>(shard_.state_total) * sizeof(float))
    return false;
  RETURN_IF_ERROR(c.read(i, share.raw(), static_cast<uint64_t>(shard_.state_offset) * sizeof(float), share.nbytes()));
  return true;
}

}  // namespace ort_train
