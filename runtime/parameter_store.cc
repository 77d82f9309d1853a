#include "runtime/parameter_store.h"

#include "runtime/vector_ops.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace ort_train {
namespace {

constexpr size_t kAlign = 64;  // each view starts on a cache line: vector loads and BLAS stay on their fast paths

size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Zeroes `dest` (on any device) from one small host block of zeros, copied
// over it piece by piece. A host zero tensor of the buffer's size added that
// size to the setup's peak: a 50M-parameter model trained with SGD peaked at
// 791 MiB, the model's parameters, the store's parameters and gradients, and
// that zero tensor, each 192 MiB.
Status zero_fill(Device& device, const Tensor& dest) {
  constexpr size_t kBlock = size_t{4} << 20;
  const size_t total = dest.nbytes();
  Tensor zeros = Tensor::host(DType::kUInt8, {static_cast<int64_t>(std::min(total, kBlock))});
  for (size_t at = 0; at < total; at += kBlock) {
    const size_t n = std::min(kBlock, total - at);
    Tensor from(DType::kUInt8, {static_cast<int64_t>(n)}, Storage::view(zeros.storage(), 0, n));
    Tensor to(DType::kUInt8, {static_cast<int64_t>(n)}, Storage::view(dest.storage(), at, n));
    RETURN_IF_ERROR(device.copy(from, to));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<ParameterStore>> ParameterStore::create(
    Device& device, const std::vector<std::pair<std::string, Tensor>>& params, bool whole_gradients) {
  std::unique_ptr<ParameterStore> store(new ParameterStore());
  std::map<DType, size_t> sizes;  // bytes per dtype, in first-seen order of the groups below
  std::vector<DType> order;
  std::vector<size_t> offsets;
  for (const auto& [name, value] : params) {
    if (store->index_.count(name)) return invalid_argument("parameter '{}' is listed twice", name);
    DType t = value.dtype();
    if (!sizes.count(t)) order.push_back(t);
    offsets.push_back(sizes[t]);
    sizes[t] += align_up(value.nbytes());
    store->index_[name] = offsets.size() - 1;
  }
  std::shared_ptr<Allocator> alloc = device.make_allocator();
  std::map<DType, size_t> group_of;
  for (DType t : order) {
    size_t bytes = std::max<size_t>(sizes[t], kAlign);
    int64_t n = static_cast<int64_t>(bytes / dtype_size(t));
    auto p = alloc->allocate(bytes);
    auto g = whole_gradients ? alloc->allocate(bytes) : nullptr;
    if (!p->data() || (g && !g->data()))
      return make_error(ErrorCode::kInternal, "out of memory for the parameter store ({} bytes of {})",
                        (g ? 2 : 1) * bytes, dtype_name(t));
    Group grp{t, Tensor(t, {n}, p), g ? Tensor(t, {n}, g) : Tensor(), Tensor(), Tensor()};
    grp.masters = grp.params;
    grp.master_grads = grp.grads;
    if (dtype_is_half(t)) {
      auto mp = alloc->allocate(static_cast<size_t>(n) * 4);
      auto mg = whole_gradients ? alloc->allocate(static_cast<size_t>(n) * 4) : nullptr;
      if (!mp->data() || (mg && !mg->data()))
        return make_error(ErrorCode::kInternal, "out of memory for the float32 master weights ({} bytes)",
                          (mg ? 8 : 4) * n);
      grp.masters = Tensor(DType::kFloat, {n}, mp);
      if (mg) grp.master_grads = Tensor(DType::kFloat, {n}, mg);
    }
    group_of[t] = store->groups_.size();
    store->groups_.push_back(grp);
  }
  // Zero gradients and padding: a whole-buffer reduction must never see stale bytes.
  for (const Group& grp : store->groups_) {
    if (grp.grads.defined()) RETURN_IF_ERROR(zero_fill(device, grp.grads));
    RETURN_IF_ERROR(zero_fill(device, grp.params));
    if (grp.has_masters()) {
      RETURN_IF_ERROR(zero_fill(device, grp.masters));
      if (grp.master_grads.defined()) RETURN_IF_ERROR(zero_fill(device, grp.master_grads));
    }
  }
  std::set<const Storage*> moved;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& [name, value] = params[i];
    const Group& grp = store->groups_[group_of.at(value.dtype())];
    Entry e;
    e.name = name;
    e.offset = offsets[i];
    if (grp.grads.defined())
      e.grad = Tensor(value.dtype(), value.dims(), Storage::view(grp.grads.storage(), e.offset, value.nbytes()));
    if (device.kind() == DeviceKind::kCpu && value.device() == DeviceKind::kCpu && value.storage() &&
        value.storage()->bytes() >= value.nbytes() && moved.insert(value.storage().get()).second) {
      // The store takes the parameter's storage over: whoever shares the
      // tensor (the caller's model) now reads the store, and nothing is held twice.
      value.storage()->move_into(grp.params.storage(), e.offset, value.nbytes());
      e.param = Tensor(value.dtype(), value.dims(), value.storage());
    } else {
      e.param = Tensor(value.dtype(), value.dims(), Storage::view(grp.params.storage(), e.offset, value.nbytes()));
      RETURN_IF_ERROR(device.copy(value, e.param));
    }
    e.master = e.param;
    e.master_grad = e.grad;
    if (grp.has_masters()) {  // same element offset in the float32 buffers
      size_t offset32 = e.offset / dtype_size(value.dtype()) * 4, bytes32 = static_cast<size_t>(value.numel()) * 4;
      e.master = Tensor(DType::kFloat, value.dims(), Storage::view(grp.masters.storage(), offset32, bytes32));
      if (grp.master_grads.defined())
        e.master_grad =
            Tensor(DType::kFloat, value.dims(), Storage::view(grp.master_grads.storage(), offset32, bytes32));
    }
    store->entries_.push_back(std::move(e));
  }
  // Masters start as the exact widening of their 16-bit parameters, one whole group at a time.
  for (const Group& grp : store->groups_)
    if (grp.has_masters()) {
      ASSIGN_OR_RETURN(VectorOps * math, vector_ops(device.kind()));
      RETURN_IF_ERROR(math->convert(grp.params, grp.masters));
    }
  RETURN_IF_ERROR(device.synchronize());
  return store;
}

void ParameterStore::bind_initializers(Graph& graph) const {
  for (const Entry& e : entries_) {
    auto it = graph.initializers.find(e.name);
    if (it != graph.initializers.end()) it->second = e.param;
  }
}

const ParameterStore::Entry* ParameterStore::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Result<ParameterStore::Shard> ParameterStore::shard(int rank, int world, int64_t align) const {
  if (groups_.size() != 1)
    return unsupported("--zero needs every trainable tensor in one dtype (here {} dtypes)", groups_.size());
  const Group& grp = groups_[0];
  const int64_t n = grp.masters.numel();
  // Rank r's range starts near n r / world, moved to the nearest multiple of
  // `align` from the start of the tensor it falls in, or its end (a tensor's
  // start or end, or padding, is always a boundary).
  std::vector<int64_t> bounds;
  for (int64_t r = 0; r <= world; ++r) {
    int64_t t = n * r / world;
    for (const Entry& e : entries_) {
      int64_t first = static_cast<int64_t>(e.offset / dtype_size(e.param.dtype()));
      if (t > first && t < first + e.param.numel())
        t = std::min(first + (t - first + align / 2) / align * align, first + e.param.numel());
    }
    bounds.push_back(t);
  }
  auto bound = [&](int64_t r) { return bounds[static_cast<size_t>(r)]; };
  Shard s;
  s.counts.assign(static_cast<size_t>(world), 0);
  s.state_counts.assign(static_cast<size_t>(world), 0);
  for (int64_t r = 0; r < world; ++r) s.counts[static_cast<size_t>(r)] = bound(r + 1) - bound(r);
  // ZeRO-2: no whole gradient buffer; this rank's range has its own.
  Tensor grads = grp.master_grads;
  if (!grads.defined()) {
    s.grads = Tensor::host(DType::kFloat, {s.counts[static_cast<size_t>(rank)]});
    std::memset(s.grads.raw(), 0, s.grads.nbytes());
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    int64_t first = static_cast<int64_t>(e.offset / dtype_size(e.param.dtype())), count = e.param.numel();
    for (int64_t r = 0; r < world; ++r) {
      int64_t a = std::max(first, bound(r)), b = std::min(first + count, bound(r + 1));
      if (a >= b) continue;
      s.state_counts[static_cast<size_t>(r)] += b - a;
      if (r != rank) continue;
      auto view = [&](const Tensor& buffer, int64_t at) {
        return Tensor(DType::kFloat, {b - a},
                      Storage::view(buffer.storage(), static_cast<size_t>(at) * 4, static_cast<size_t>(b - a) * 4));
      };
      s.parts.push_back(Shard::Part{i, a - first, view(grp.masters, a),
                                    grads.defined() ? view(grads, a) : view(s.grads, a - bound(rank))});
    }
  }
  for (int64_t r = 0; r < world; ++r) {
    if (r < rank) s.state_offset += s.state_counts[static_cast<size_t>(r)];
    s.state_total += s.state_counts[static_cast<size_t>(r)];
  }
  return s;
}

size_t ParameterStore::param_bytes() const {
  size_t n = 0;
  for (const Group& g : groups_) n += g.params.nbytes();
  return n;
}

}  // namespace ort_train
