#include "training/sharded_gradients.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <set>

#include "runtime/vector_ops.h"

namespace ort_train {

Result<std::unique_ptr<ShardedGradients>> ShardedGradients::create(const ParameterStore& store,
                                                                   const ParameterStore::Shard& shard, int rank,
                                                                   const GradientGraph& gg, const Executor& executor,
                                                                   size_t bucket_bytes,
                                                                   std::shared_ptr<Communicator> comm) {
  if (!shard.grads.defined())
    return make_error(ErrorCode::kInternal, "ZeRO-2 needs a store without whole gradients");
  std::unique_ptr<ShardedGradients> made(new ShardedGradients());
  ShardedGradients& self = *made;
  self.comm_ = std::move(comm);
  self.share_ = shard.grads;
  ASSIGN_OR_RETURN(self.math_, vector_ops(DeviceKind::kCpu));
  const int world = static_cast<int>(shard.counts.size());

  // The gradients in the order the plan makes them final; those no node makes last.
  std::map<std::string, size_t> entry_of;
  for (size_t i = 0; i < store.entries().size(); ++i) entry_of[gg.gradient.at(store.entries()[i].name)] = i;
  std::vector<std::string> order;
  std::set<std::string> made_by_a_step;
  const ExecutionPlan& plan = executor.plan();
  for (const PlanStep& step : plan.steps)
    for (int s : step.ready)
      if (entry_of.count(plan.slot_names[s])) {
        order.push_back(plan.slot_names[s]);
        made_by_a_step.insert(plan.slot_names[s]);
      }
  for (const auto& [name, entry] : entry_of)
    if (!made_by_a_step.count(name)) self.unmade_.push_back(name);

  // Buckets of about bucket_bytes, cut in that order; the unmade ones last, together.
  std::vector<std::vector<std::string>> groups;
  int64_t elements = 0;
  for (const std::string& name : order) {
    if (groups.empty() || elements * 4 >= static_cast<int64_t>(bucket_bytes)) {
      groups.emplace_back();
      elements = 0;
    }
    groups.back().push_back(name);
    elements += store.entries()[entry_of.at(name)].param.numel();
  }
  if (!self.unmade_.empty()) groups.push_back(self.unmade_);

  int64_t largest = 0;
  for (const std::vector<std::string>& names : groups) {
    Bucket b;
    b.members = names.size();
    b.counts.assign(static_cast<size_t>(world), 0);
    // Each member's overlap with each rank's share: its pieces.
    auto overlap = [&](const ParameterStore::Entry& e, int r) {
      int64_t first = static_cast<int64_t>(e.offset / dtype_size(e.param.dtype()));
      auto [a, count] = shard.overlap(static_cast<size_t>(r), first, e.param.numel());
      return std::array<int64_t, 3>{first, a, count};
    };
    for (const std::string& name : names)
      for (int r = 0; r < world; ++r) b.counts[static_cast<size_t>(r)] += overlap(store.entries()[entry_of.at(name)], r)[2];
    std::vector<int64_t> cursor(1, 0);  // where each rank's pieces go next
    for (int64_t c : b.counts) cursor.push_back(cursor.back() + c);
    largest = std::max(largest, cursor.back());
    for (const std::string& name : names) {
      const ParameterStore::Entry& e = store.entries()[entry_of.at(name)];
      Member m;
      m.bucket = self.buckets_.size();
      m.numel = e.param.numel();
      for (int r = 0; r < world; ++r) {
        auto [first, a, count] = overlap(e, r);
        if (count == 0) continue;
        int64_t& at = cursor[static_cast<size_t>(r)];
        m.pack.push_back(Piece{a - first, at, count});
        if (r == rank) b.unpack.push_back(Piece{at, a - shard.begin(static_cast<size_t>(rank)), count});
        at += count;
      }
      self.members_[name] = std::move(m);
    }
    self.buckets_.push_back(std::move(b));
  }
  self.buffer_ = Tensor::host(DType::kFloat, {std::max<int64_t>(largest, 1)});
  return made;
}

void ShardedGradients::begin(bool first) {
  first_ = first;
  for (Bucket& b : buckets_) b.arrived = 0;
}

Status ShardedGradients::gradient_ready(const std::string& name, const Tensor& value) {
  auto it = members_.find(name);
  if (it == members_.end()) return Status::Ok();
  const Member& m = it->second;
  if (value.numel() != m.numel || !dtype_is_float(value.dtype()) || value.dtype() == DType::kDouble)
    return make_error(ErrorCode::kInternal, "gradient '{}' has {} {} elements; its parameter has {}", name,
                      value.numel(), dtype_name(value.dtype()), m.numel);
  const size_t elem = dtype_size(value.dtype());
  for (const Piece& p : m.pack) {
    if (value.dtype() == DType::kFloat) {
      std::memcpy(buffer_.data<float>() + p.to, value.data<float>() + p.from, static_cast<size_t>(p.count) * 4);
    } else {  // a 16-bit gradient, widened as it is packed
      Tensor from(value.dtype(), {p.count},
                  Storage::view(value.storage(), static_cast<size_t>(p.from) * elem, static_cast<size_t>(p.count) * elem));
      Tensor to(DType::kFloat, {p.count},
                Storage::view(buffer_.storage(), static_cast<size_t>(p.to) * 4, static_cast<size_t>(p.count) * 4));
      RETURN_IF_ERROR(math_->convert(from, to));
    }
  }
  Bucket& b = buckets_[m.bucket];
  if (++b.arrived == b.members) RETURN_IF_ERROR(reduce(b));
  return Status::Ok();
}

Status ShardedGradients::reduce(Bucket& b) {
  int64_t total = 0;
  for (int64_t c : b.counts) total += c;
  Tensor packed(DType::kFloat, {total}, Storage::view(buffer_.storage(), 0, static_cast<size_t>(total) * 4));
  RETURN_IF_ERROR(comm_->reduce_scatter_sum(packed, b.counts));
  auto view = [](const Tensor& t, int64_t at, int64_t count) {
    return Tensor(DType::kFloat, {count},
                  Storage::view(t.storage(), static_cast<size_t>(at) * 4, static_cast<size_t>(count) * 4));
  };
  for (const Piece& p : b.unpack) {
    Tensor from = view(buffer_, p.from, p.count), to = view(share_, p.to, p.count);
    if (first_) {
      std::memcpy(to.raw(), from.raw(), from.nbytes());
    } else {
      RETURN_IF_ERROR(math_->add_into(to, from));
    }
  }
  return Status::Ok();
}

Status ShardedGradients::finish(const Executor& executor) {
  for (const std::string& name : unmade_) {
    ASSIGN_OR_RETURN(Tensor value, executor.constant(name));
    RETURN_IF_ERROR(gradient_ready(name, value));
  }
  for (const Bucket& b : buckets_)
    if (b.arrived != b.members)
      return make_error(ErrorCode::kInternal, "ZeRO-2: a gradient bucket got {} of its {} gradients", b.arrived,
                        b.members);
  return Status::Ok();
}

}  // namespace ort_train
