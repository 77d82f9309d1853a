// ZeRO-2's gradient path without MPI: a step graph's gradients packed by
// share as the backward makes them final, reduce-scattered bucket by bucket
// by a stand-in communicator, and landed in the rank's share; the executor
// freeing what it handed over. (Whole runs at 2 and 3 ranks:
// tests/distributed/run_data_parallel.py --check zero.)
#include <algorithm>
#include <cstring>
#include <filesystem>

#include "autodiff/training_graph.h"
#include "runtime/executor.h"
#include "runtime/parameter_store.h"
#include "runtime/vector_ops.h"
#include "test_util.h"
#include "training/batch_source.h"
#include "training/sharded_gradients.h"

namespace ort_train::testing {
namespace {

// Rank `rank` of `size`, where every other rank holds exactly this rank's
// values: a reduce-scatter multiplies this rank's range by `size`.
class MirroredRanks : public Communicator {
 public:
  MirroredRanks(int rank, int size) : rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mirrored ranks (test)"; }
  Status reduce_scatter_sum(const Tensor& t, const std::vector<int64_t>& counts) override {
    int64_t total = 0, first = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      if (static_cast<int>(r) < rank_) first += counts[r];
      total += counts[r];
    }
    if (total != t.numel()) return invalid_argument("counts add to {}, the tensor has {}", total, t.numel());
    ++reduce_scatters;
    float* p = t.data<float>();
    for (int64_t k = first; k < first + counts[static_cast<size_t>(rank_)]; ++k) p[k] *= static_cast<float>(size_);
    return Status::Ok();
  }
  Status allreduce_sum(const Tensor&) override { return unsupported("not used"); }
  Result<std::unique_ptr<CommRequest>> iallreduce_sum(const Tensor&) override { return unsupported("not used"); }
  void set_ordered_sums(bool) override {}
  bool ordered_sums() const override { return false; }
  void set_timeout(double) override {}
  Status allgather(const Tensor&, const std::vector<int64_t>&) override { return unsupported("not used"); }
  Result<std::unique_ptr<CommRequest>> ireduce_scatter_sum(const Tensor&, const std::vector<int64_t>&) override {
    return unsupported("not used");
  }
  Result<std::unique_ptr<CommRequest>> iallgather(const Tensor&, const std::vector<int64_t>&) override {
    return unsupported("not used");
  }
  Result<std::unique_ptr<CommRequest>> ibroadcast(const Tensor&, int) override { return unsupported("not used"); }
  Result<std::unique_ptr<CommRequest>> ibarrier() override { return unsupported("not used"); }
  Status broadcast(const Tensor&, int) override { return unsupported("not used"); }
  Status barrier() override { return unsupported("not used"); }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
  int reduce_scatters = 0;

 private:
  int rank_, size_;
};

}  // namespace

TEST_CASE("a share boundary inside a tensor falls a multiple of the alignment from its start", "[training][zero]") {
  auto cpu = get_device(DeviceKind::kCpu);
  REQUIRE(cpu.ok());
  std::vector<std::pair<std::string, Tensor>> params = {{"a", random_tensor({1000}, 1)},
                                                        {"b", random_tensor({37, 11}, 2)},
                                                        {"c", random_tensor({5}, 3)}};
  auto store = ParameterStore::create(**cpu, params, /*whole_gradients=*/false);
  REQUIRE(store.ok());
  for (const ParameterStore::Group& g : (*store)->groups()) {
    CHECK_FALSE(g.grads.defined());
    CHECK_FALSE(g.master_grads.defined());
  }
  for (int world : {2, 3, 5}) {
    int64_t covered = 0, total = 0;
    for (int rank = 0; rank < world; ++rank) {
      auto s = (*store)->shard(rank, world, 64);
      REQUIRE(s.ok());
      if (rank == 0) for (int64_t c : s->counts) total += c;
      REQUIRE(s->grads.defined());
      CHECK(s->grads.numel() == s->counts[static_cast<size_t>(rank)]);
      for (const ParameterStore::Shard::Part& p : s->parts) {
        const ParameterStore::Entry& e = (*store)->entries()[p.entry];
        // Each part starts at its tensor's start or on the alignment, and ends at its end or on the alignment.
        CHECK(p.begin % 64 == 0);
        int64_t end = p.begin + p.master.numel();
        CHECK((end == e.param.numel() || end % 64 == 0));
        // Its master is the tensor's own values there.
        CHECK(std::memcmp(p.master.raw(), e.master.data<float>() + p.begin, p.master.nbytes()) == 0);
        covered += p.master.numel();
      }
    }
    CHECK(covered == 1000 + 37 * 11 + 5);
    CHECK(total == (*store)->groups()[0].params.numel());
  }
}

TEST_CASE("ZeRO-2 lands each rank's share of every micro-batch's gradients, summed over the ranks",
          "[training][zero]") {
  ModelDescription desc;
  TrainingGraph tg = bundled_training_graph("bert", &desc);
  auto source = make_batch_source(source_dir() + "/tests/models/bert/train_batches", tg, desc, 0);
  REQUIRE(source.ok());
  auto feeds = (*source)(0);
  REQUIRE(feeds.ok());
  auto ex = Executor::create(tg.model);
  REQUIRE(ex.ok());
  RunOptions plain;
  plain.training = true;
  auto want = (*ex)->run(*feeds, plain);  // every gradient whole
  REQUIRE(want.ok());

  auto cpu = get_device(DeviceKind::kCpu);
  REQUIRE(cpu.ok());
  std::vector<std::pair<std::string, Tensor>> params;
  for (const std::string& w : tg.gradients.trainable) params.emplace_back(w, tg.model.graph.initializers.at(w).clone());
  auto store = ParameterStore::create(**cpu, params, false);
  REQUIRE(store.ok());
  const int world = 3;
  for (int rank = 0; rank < world; ++rank) {
    auto shard = (*store)->shard(rank, world, 16);  // boundaries inside tensors, not only between them
    REQUIRE(shard.ok());
    auto comm = std::make_shared<MirroredRanks>(rank, world);
    auto sharded = ShardedGradients::create(**store, *shard, rank, tg.gradients, **ex, 4096, comm);
    INFO(sharded.status().message());
    REQUIRE(sharded.ok());
    CHECK((*sharded)->buckets() > 3);
    CHECK((*sharded)->buffer_bytes() < 4096 + 4 * 768 * 768);
    for (int micro = 0; micro < 2; ++micro) {
      (*sharded)->begin(micro == 0);
      RunOptions run = plain;
      std::vector<std::string> seen;
      run.on_output_ready = [&](const std::string& name, const Tensor& t) {
        seen.push_back(name);
        return (*sharded)->gradient_ready(name, t);
      };
      run.release_outputs = true;
      auto out = (*ex)->run(*feeds, run, {tg.gradients.loss});
      REQUIRE(out.ok());
      REQUIRE((*sharded)->finish(**ex).ok());
      CHECK(out->size() == 1);
      CHECK(seen.size() >= tg.gradients.trainable.size());
      // The share: the ranks' sum (world times this rank's), twice after the second micro-batch.
      for (const ParameterStore::Shard::Part& p : shard->parts) {
        const std::string& w = (*store)->entries()[p.entry].name;
        const Tensor& g = want->at(tg.gradients.gradient.at(w));
        const float* whole = g.data<float>() + p.begin;
        const float* got = p.master_grad.data<float>();
        int64_t bad = 0;
        for (int64_t k = 0; k < p.master_grad.numel(); ++k)
          bad += got[k] != whole[k] * static_cast<float>(world) * static_cast<float>(micro + 1);
        INFO(w << " rank " << rank << " micro-batch " << micro);
        CHECK(bad == 0);
      }
    }
  }
}

TEST_CASE("norm_partials are global_norm's chunks, in order", "[training][zero]") {
  auto math = vector_ops(DeviceKind::kCpu);
  REQUIRE(math.ok());
  std::vector<Tensor> ts = {random_tensor({kNormChunk * 2 + 5}, 7), random_tensor({3}, 8)};
  auto parts = (*math)->norm_partials(ts);
  REQUIRE(parts.ok());
  CHECK(parts->size() == 4);
  double sq = 0;
  for (double v : *parts) sq += v;
  auto norm = (*math)->global_norm(ts);
  REQUIRE(norm.ok());
  CHECK(std::sqrt(sq) == *norm);
}

}  // namespace ort_train::testing
