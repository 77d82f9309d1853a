#include "training/gradient_buckets.h"

#include <algorithm>
#include <chrono>

namespace ort_train {

namespace {

// ZeRO-1: how many of the elements [first, first + n) of the buffer fall in each rank's range.
std::vector<int64_t> counts_in_ranges(const ParameterStore::Shard& zero, int64_t first, int64_t n) {
  std::vector<int64_t> counts;
  for (size_t r = 0; r < zero.counts.size(); ++r) counts.push_back(zero.overlap(r, first, n).second);
  return counts;
}

}  // namespace

Result<std::unique_ptr<GradientBuckets>> GradientBuckets::create(const ParameterStore& store, const GradientGraph& gg,
                                                                 size_t bucket_bytes, DType wire, Device& device,
                                                                 const ParameterStore::Shard* zero) {
  if (wire != DType::kFloat && wire != DType::kBFloat16)
    return invalid_argument("gradients are reduced in float32 or bfloat16, not {}", dtype_name(wire));
  if (zero && (wire != DType::kFloat || store.groups().size() != 1))
    return make_error(ErrorCode::kInternal, "ZeRO-1's buckets need one float32-wire buffer");
  std::unique_ptr<GradientBuckets> made(new GradientBuckets());
  GradientBuckets& self = *made;
  ASSIGN_OR_RETURN(self.math_, vector_ops(device.kind()));
  // `first`: the slice's first element in its buffer.
  auto with_wire = [&](Tensor slice, int64_t first) -> Result<Bucket> {
    Bucket b;
    b.slice = std::move(slice);
    if (zero) b.counts = counts_in_ranges(*zero, first, b.slice.numel());
    if (wire == DType::kBFloat16) {
      ASSIGN_OR_RETURN(b.wire, to_device(device, Tensor::host(DType::kBFloat16, b.slice.dims())));
    }
    return b;
  };
  for (const ParameterStore::Group& grp : store.groups()) {
    if (grp.has_masters() || grp.dtype != DType::kFloat || bucket_bytes == 0) {
      ASSIGN_OR_RETURN(Bucket b, with_wire(grp.master_grads, 0));
      self.after_run_.push_back(std::move(b));
      continue;
    }
    std::vector<const ParameterStore::Entry*> entries;
    for (const ParameterStore::Entry& e : store.entries())
      if (e.param.dtype() == grp.dtype) entries.push_back(&e);
    // From the end: each bucket collects entries until it holds bucket_bytes.
    size_t end = entries.size();
    while (end > 0) {
      size_t begin = end, bytes = 0;
      while (begin > 0 && (bytes == 0 || bytes + entries[begin - 1]->grad.nbytes() <= bucket_bytes)) {
        --begin;
        bytes += entries[begin]->grad.nbytes();
      }
      size_t first = entries[begin]->offset, last = entries[end - 1]->offset + entries[end - 1]->grad.nbytes();
      ASSIGN_OR_RETURN(Bucket b, with_wire(Tensor(DType::kFloat, {static_cast<int64_t>((last - first) / 4)},
                                                  Storage::view(grp.grads.storage(), first, last - first)),
                                           static_cast<int64_t>(first / 4)));
      b.members = end - begin;
      for (size_t i = begin; i < end; ++i) self.bucket_of_[gg.gradient.at(entries[i]->name)] = self.buckets_.size();
      self.buckets_.push_back(std::move(b));
      end = begin;
    }
  }
  return made;
}

Status GradientBuckets::start(Bucket& b, Communicator& comm) {
  if (!b.counts.empty()) {
    ASSIGN_OR_RETURN(b.request, comm.ireduce_scatter_sum(b.slice, b.counts));
    return Status::Ok();
  }
  if (!b.wire.defined()) {
    ASSIGN_OR_RETURN(b.request, comm.iallreduce_sum(b.slice));
    return Status::Ok();
  }
  RETURN_IF_ERROR(math_->convert(b.slice, b.wire));
  ASSIGN_OR_RETURN(b.request, comm.iallreduce_sum(b.wire));
  return Status::Ok();
}

Status GradientBuckets::land(Bucket& b) {
  RETURN_IF_ERROR(b.request->wait());
  b.request.reset();
  return b.wire.defined() ? math_->convert(b.wire, b.slice) : Status::Ok();
}

void GradientBuckets::begin() {
  for (Bucket& b : buckets_) {
    b.arrived = 0;
    b.request.reset();
  }
}

Status GradientBuckets::gradient_ready(const std::string& name, Communicator& comm) {
  auto it = bucket_of_.find(name);
  if (it == bucket_of_.end()) return Status::Ok();
  Bucket& b = buckets_[it->second];
  if (++b.arrived == b.members) RETURN_IF_ERROR(start(b, comm));
  for (Bucket& other : buckets_)  // MPI progresses non-blocking collectives inside its calls
    if (other.request) other.request->test();
  return Status::Ok();
}

Result<double> GradientBuckets::finish(Communicator& comm) {
  auto started = std::chrono::steady_clock::now();
  for (Bucket& b : buckets_) {
    if (!b.request) RETURN_IF_ERROR(start(b, comm));  // a gradient never reported (not produced this run)
  }
  for (Bucket& b : buckets_) RETURN_IF_ERROR(land(b));
  for (Bucket& b : after_run_) {
    RETURN_IF_ERROR(start(b, comm));
    RETURN_IF_ERROR(land(b));
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace ort_train
