#include "training/gradient_buckets.h"

#include <chrono>

namespace ort_train {

GradientBuckets::GradientBuckets(const ParameterStore& store, const GradientGraph& gg, size_t bucket_bytes) {
  for (const ParameterStore::Group& grp : store.groups()) {
    if (grp.has_masters() || grp.dtype != DType::kFloat || bucket_bytes == 0) {
      after_run_.push_back(grp.master_grads);
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
      Bucket b;
      b.slice = Tensor(DType::kFloat, {static_cast<int64_t>((last - first) / 4)},
                       Storage::view(grp.grads.storage(), first, last - first));
      b.members = end - begin;
      for (size_t i = begin; i < end; ++i) bucket_of_[gg.gradient.at(entries[i]->name)] = buckets_.size();
      buckets_.push_back(std::move(b));
      end = begin;
    }
  }
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
  if (++b.arrived == b.members) {
    ASSIGN_OR_RETURN(b.request, comm.iallreduce_sum(b.slice));
  }
  for (Bucket& other : buckets_)  // MPI progresses non-blocking collectives inside its calls
    if (other.request) other.request->test();
  return Status::Ok();
}

Result<double> GradientBuckets::finish(Communicator& comm) {
  auto started = std::chrono::steady_clock::now();
  for (Bucket& b : buckets_) {
    if (!b.request) {  // a gradient never reported (not produced this run): reduce it now
      ASSIGN_OR_RETURN(b.request, comm.iallreduce_sum(b.slice));
    }
  }
  for (Bucket& b : buckets_) {
    RETURN_IF_ERROR(b.request->wait());
    b.request.reset();
  }
  for (const Tensor& t : after_run_) RETURN_IF_ERROR(comm.allreduce_sum(t));
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
}

}  // namespace ort_train
