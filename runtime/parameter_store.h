// The parameter store: one flat parameter buffer and one flat gradient buffer
// per dtype, on the training device. Every trainable tensor is a view into
// its dtype's parameter buffer and its gradient a view at the same offset in
// the gradient buffer (views keep the buffers alive). The executor writes
// each gradient straight into its view (or adds into it when accumulating
// micro-batches), the optimizers update the parameter views in place, and a
// communicator can reduce a gradient buffer, or a bucket of it, as one block.
#pragma once
#include <algorithm>
#include <utility>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/status.h"
#include "graph/tensor.h"
#include "runtime/device.h"

namespace ort_train {

class ParameterStore {
 public:
  // Float16 and bfloat16 parameters also get float32 master copies (and
  // float32 master gradients) at the same element offsets: the optimizer
  // updates the masters, the 16-bit values the graph reads are rounded from
  // them after each step, so updates smaller than a 16-bit step are not
  // lost. For every other dtype the master is the parameter itself.
  struct Entry {
    std::string name;
    Tensor param;        // view into the dtype's parameter buffer
    Tensor grad;         // view into the dtype's gradient buffer, same offset
    Tensor master;       // float32 view the optimizer updates (== param unless 16-bit)
    Tensor master_grad;  // float32 view the optimizer reads (== grad unless 16-bit)
    size_t offset = 0;   // bytes from the start of its buffers
  };
  struct Group {
    DType dtype = DType::kUndefined;
    Tensor params;        // 1-D, every parameter of this dtype back to back (64-byte aligned starts)
    Tensor grads;         // 1-D, the same layout
    Tensor masters;       // 16-bit groups: 1-D float32, the same element layout; else == params
    Tensor master_grads;  // 16-bit groups: 1-D float32; else == grads
    bool has_masters() const { return masters.raw() != params.raw(); }
  };

  // Lays out `params` (name, current value on the host or the device) in
  // order, copies the values in, and leaves the gradients zero. On the CPU
  // the given tensors' storage moves into the store (Storage::move_into):
  // every holder of them then sees the trained values, with no second copy.
  // Without `whole_gradients` (ZeRO-2) there are no gradient buffers: the
  // groups' grads and master_grads and the entries' grad and master_grad are
  // undefined, and each rank's Shard has its own.
  static Result<std::unique_ptr<ParameterStore>> create(Device& device,
                                                        const std::vector<std::pair<std::string, Tensor>>& params,
                                                        bool whole_gradients = true);

  // ZeRO's layout: the store's one group split into consecutive element
  // ranges, one per rank. Each rank's optimizer keeps state for its range
  // only: a part for each tensor overlapping it (weight decay and LAMB's
  // norms follow the tensor). A range boundary inside a tensor lies a
  // multiple of `align` elements from its start (ZeRO-2 aligns them to the
  // norm's chunks, so each chunk's partial sum is made whole on one rank).
  struct Shard {
    std::vector<int64_t> counts;  // buffer elements per rank
    // Rank r's first element (r == counts.size(): the end).
    int64_t begin(size_t r) const {
      int64_t at = 0;
      for (size_t q = 0; q < r; ++q) at += counts[q];
      return at;
    }
    // Where the elements [first, first + n) of the buffer meet rank r's
    // range: {the first shared element, how many} (count 0: they do not meet).
    std::pair<int64_t, int64_t> overlap(size_t r, int64_t first, int64_t n) const {
      const int64_t a = std::max(first, begin(r)), z = std::min(first + n, begin(r + 1));
      return {a, std::max<int64_t>(z - a, 0)};
    }
    struct Part {
      size_t entry = 0;    // index into entries()
      int64_t begin = 0;   // its first element within the entry
      Tensor master;       // float32 view of this rank's part of the entry's master
      Tensor master_grad;  // and of its master gradient
    };
    std::vector<Part> parts;            // this rank's, in buffer order
    Tensor grads;  // ZeRO-2 (a store without whole gradients): this range's float32 gradients, counts[rank] long
    std::vector<int64_t> state_counts;  // optimizer-state elements per rank (the parts' sizes)
    int64_t state_offset = 0;           // this rank's first state element in the whole
    int64_t state_total = 0;            // every rank's
  };
  // The shard of `rank` among `world`; every trainable tensor must share one dtype.
  Result<Shard> shard(int rank, int world, int64_t align = 1) const;

  const std::vector<Entry>& entries() const { return entries_; }
  const std::vector<Group>& groups() const { return groups_; }
  const Entry* find(const std::string& name) const;
  // Points each initializer of `graph` that the store holds at the store's
  // tensor, so executors of the graph read (and the optimizer updates) one copy.
  void bind_initializers(Graph& graph) const;
  size_t param_bytes() const;  // the parameter buffers (masters not counted)

 private:
  std::vector<Entry> entries_;
  std::vector<Group> groups_;
  std::map<std::string, size_t> index_;
};

}  // namespace ort_train
