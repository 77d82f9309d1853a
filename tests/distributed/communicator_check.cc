// Every collective of the job communicator, blocking and non-blocking, under
// mpirun (CTest: distributed.every_collective, 3 ranks). Each rank checks the
// values it gets against what the sum, split or broadcast must give; exit 0
// when all agree. A standalone program because the collectives need a
// launcher: a Catch2 test binary runs as one process.
//
// With --device cuda the same checks run on device tensors through the NCCL
// communicator, one GPU per rank (CTest: distributed.every_collective_nccl,
// 2 ranks); exit 77 (skipped) when there are fewer GPUs than ranks or no NCCL.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/communicator.h"
#include "runtime/device.h"

using namespace ort_train;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what, int rank) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED %s\n", rank, what.c_str());
    ++failures;
  }
}

void must(const Status& st, const std::string& what, int rank) { expect(st.ok(), what + ": " + st.message(), rank); }

Tensor floats(std::vector<float> v) {
  Tensor t = Tensor::host(DType::kFloat, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

}  // namespace

constexpr int kSkipped = 77;

int main(int argc, char** argv) {
  const bool on_gpu = argc == 3 && std::string(argv[1]) == "--device" && std::string(argv[2]) == "cuda";
  auto made = job_communicator();
  if (!made.ok()) {
    std::fprintf(stderr, "no communicator: %s\n", made.status().message().c_str());
    return 1;
  }
  std::shared_ptr<Communicator> comm = *made;
  std::shared_ptr<Device> gpu;
  if (on_gpu) {
    const int local = launch_info_from_environment().local_rank;
    if (cuda_device_count() <= local) {
      std::printf("ORT_TRAIN_TEST_SKIPPED: rank %d needs GPU %d, %d visible\n", comm->rank(), local, cuda_device_count());
      return kSkipped;
    }
    DeviceSettings settings;
    settings.index = local;
    auto device = get_device(DeviceKind::kCuda, settings);
    if (!device.ok()) {
      std::fprintf(stderr, "rank %d: GPU %d is visible but unusable: %s\n", comm->rank(), local,
                   device.status().message().c_str());
      return 1;
    }
    auto nccl = device_communicator(DeviceKind::kCuda, comm, local);
    // Only a build without NCCL skips; NCCL failing to set up on a GPU machine is a failure.
    if (!nccl.ok() && nccl.status().code() == ErrorCode::kUnsupported) {
      std::printf("ORT_TRAIN_TEST_SKIPPED: %s\n", nccl.status().message().c_str());
      return kSkipped;
    }
    if (!nccl.ok()) {
      std::fprintf(stderr, "rank %d: NCCL setup failed: %s\n", comm->rank(), nccl.status().message().c_str());
      return 1;
    }
    gpu = *device;
    comm = *nccl;
  }
  // Host tensors go to the GPU and back in --device cuda mode.
  auto up = [&](Tensor t) { return gpu ? *to_device(*gpu, t) : t; };
  auto down = [&](const Tensor& t) { return gpu ? *to_host(*gpu, t) : t; };
  Communicator& c = *comm;
  const int r = c.rank(), n = c.size();
  const float tri = static_cast<float>(n * (n + 1) / 2);
  for (int blocking = 1; blocking >= 0; --blocking) {
    std::string mode = blocking ? "" : " (non-blocking)";
    auto finish = [&](Result<std::unique_ptr<CommRequest>> req, const std::string& what) {
      if (!req.ok()) return must(req.status(), what, r);
      must((*req)->wait(), what, r);
    };
    // allreduce: rank r adds (r+1) * [1, 2].
    Tensor a = up(floats({static_cast<float>(r + 1), static_cast<float>(2 * (r + 1))}));
    if (blocking) must(c.allreduce_sum(a), "allreduce", r);
    else finish(c.iallreduce_sum(a), "iallreduce");
    a = down(a);
    expect(a.data<float>()[0] == tri && a.data<float>()[1] == 2 * tri, "allreduce sum" + mode, r);
    // broadcast from the last rank.
    Tensor b = up(floats({static_cast<float>(r), 7.f}));
    if (blocking) must(c.broadcast(b, n - 1), "broadcast", r);
    else finish(c.ibroadcast(b, n - 1), "ibroadcast");
    b = down(b);
    expect(b.data<float>()[0] == static_cast<float>(n - 1), "broadcast value" + mode, r);
    // reduce-scatter over 2n+1 elements: element i of rank q is 100q + i.
    const int64_t len = 2 * n + 1;
    std::vector<int64_t> counts;
    for (int q = 0; q < n; ++q) counts.push_back(len * (q + 1) / n - len * q / n);
    int64_t lo = len * r / n;
    std::vector<float> v;
    for (int64_t i = 0; i < len; ++i) v.push_back(static_cast<float>(100 * r + i));
    Tensor rs = up(floats(v));
    if (blocking) must(c.reduce_scatter_sum(rs, counts), "reduce-scatter", r);
    else finish(c.ireduce_scatter_sum(rs, counts), "ireduce-scatter");
    rs = down(rs);
    for (int64_t i = lo; i < lo + counts[static_cast<size_t>(r)]; ++i)
      expect(rs.data<float>()[i] == static_cast<float>(100 * n * (n - 1) / 2 + n * i), "reduce-scatter share" + mode, r);
    for (int64_t i = 0; i < len; ++i)  // the other ranks' ranges are left as they were
      if (i < lo || i >= lo + counts[static_cast<size_t>(r)])
        expect(rs.data<float>()[i] == static_cast<float>(100 * r + i), "reduce-scatter leaves the rest" + mode, r);
    // A range that lies in one rank's part (a ZeRO-1 bucket): the others receive nothing, and keep theirs.
    std::vector<int64_t> one_owner(static_cast<size_t>(n), 0);
    one_owner[static_cast<size_t>(n - 1)] = len;
    Tensor owned = up(floats(v));
    if (blocking) must(c.reduce_scatter_sum(owned, one_owner), "reduce-scatter to one rank", r);
    else finish(c.ireduce_scatter_sum(owned, one_owner), "ireduce-scatter to one rank");
    owned = down(owned);
    for (int64_t i = 0; i < len; ++i)
      expect(owned.data<float>()[i] == static_cast<float>(r == n - 1 ? 100 * n * (n - 1) / 2 + n * i : 100 * r + i),
             "reduce-scatter to one rank" + mode, r);
    // all-gather: each rank writes its own range, everyone ends with all of them.
    Tensor ag = floats(std::vector<float>(static_cast<size_t>(len), -1.f));
    for (int64_t i = lo; i < lo + counts[static_cast<size_t>(r)]; ++i) ag.data<float>()[i] = static_cast<float>(r);
    ag = up(ag);
    if (blocking) must(c.allgather(ag, counts), "all-gather", r);
    else finish(c.iallgather(ag, counts), "iall-gather");
    ag = down(ag);
    for (int q = 0, at = 0; q < n; at += static_cast<int>(counts[static_cast<size_t>(q)]), ++q)
      for (int64_t i = at; i < at + counts[static_cast<size_t>(q)]; ++i)
        expect(ag.data<float>()[i] == static_cast<float>(q), "all-gather range" + mode, r);
    if (blocking) must(c.barrier(), "barrier", r);
    else finish(c.ibarrier(), "ibarrier");
  }
  // Ordered sums: ((v0 + v1) + v2) + ... in float, where the order changes the
  // result (host tensors: NCCL's own order is fixed but not the ranks').
  c.set_ordered_sums(true);
  auto value = [](int q) { return q == 0 ? 1e8f : (q % 2 ? 1.f : -1e8f); };
  float want = value(0);
  for (int q = 1; q < n; ++q) want = want + value(q);
  Tensor o = floats({value(r)});
  must(c.allreduce_sum(o), "ordered allreduce", r);
  expect(o.data<float>()[0] == want, "ordered allreduce in rank order", r);
  c.set_ordered_sums(false);
  if (r == 0) std::printf("%d ranks: every collective %s\n", n, failures ? "FAILED" : "agrees");
  return failures ? 1 : 0;
}
