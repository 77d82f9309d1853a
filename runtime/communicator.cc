#include "runtime/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "runtime/plugin_loader.h"

namespace ort_train {
namespace {

std::map<std::string, CommunicatorFactory>& backends() {
  static std::map<std::string, CommunicatorFactory> b;
  return b;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  return end && *end == '\0' && n >= 0 && n < (1 << 24) ? static_cast<int>(n) : fallback;
}

class SingleProcess : public Communicator {
 public:
  Result<std::unique_ptr<CommRequest>> iallreduce_sum(const Tensor&) override { return finished_request(); }
  void set_ordered_sums(bool) override {}
  bool ordered_sums() const override { return false; }
  Status reduce_scatter_sum(const Tensor&, const std::vector<int64_t>&) override { return Status::Ok(); }
  Status allgather(const Tensor&, const std::vector<int64_t>&) override { return Status::Ok(); }
  Result<std::unique_ptr<CommRequest>> ireduce_scatter_sum(const Tensor&, const std::vector<int64_t>&) override {
    return finished_request();
  }
  Result<std::unique_ptr<CommRequest>> iallgather(const Tensor&, const std::vector<int64_t>&) override {
    return finished_request();
  }
  Result<std::unique_ptr<CommRequest>> ibroadcast(const Tensor&, int) override {
    return finished_request();
  }
  Result<std::unique_ptr<CommRequest>> ibarrier() override { return finished_request(); }
  void set_timeout(double) override {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend() const override { return "single process"; }
  Status allreduce_sum(const Tensor&) override { return Status::Ok(); }
  Status broadcast(const Tensor&, int) override { return Status::Ok(); }
  Status barrier() override { return Status::Ok(); }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }
};

}  // namespace

std::unique_ptr<CommRequest> finished_request() {
  class Finished : public CommRequest {
   public:
    bool test() override { return true; }
    Status wait() override { return Status::Ok(); }
  };
  return std::make_unique<Finished>();
}

LaunchInfo launch_info_from_environment() {
  LaunchInfo info;
  // The first launcher whose variables are present; each names rank, size,
  // local rank and local size.
  struct Vars { const char *rank, *size, *local, *local_size, *launcher; };
  for (const Vars& v :
       {Vars{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
             "mpirun"},
        Vars{"PMIX_RANK", "PMIX_SIZE", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE", "pmi"},
        Vars{"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "pmi"},
        Vars{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "srun"}}) {
    int size = env_int(v.size, 0);
    if (size < 1 || !std::getenv(v.rank)) continue;
    info.size = size;
    info.rank = env_int(v.rank, 0);
    info.local_rank = env_int(v.local, info.rank);
    info.local_size = std::max(1, env_int(v.local_size, 1));
    info.launcher = v.launcher;
    break;
  }
  return info;
}

namespace {
std::map<DeviceKind, DeviceCommunicatorFactory>& device_backends() {
  static std::map<DeviceKind, DeviceCommunicatorFactory> b;
  return b;
}
}  // namespace

DeviceCommunicatorRegistrar::DeviceCommunicatorRegistrar(DeviceKind kind, DeviceCommunicatorFactory factory) {
  device_backends()[kind] = std::move(factory);
}

Result<std::shared_ptr<Communicator>> device_communicator(DeviceKind kind, std::shared_ptr<Communicator> host,
                                                          int device_index) {
  auto it = device_backends().find(kind);
  if (it == device_backends().end())
    return unsupported("no communicator for {} tensors in this build{}", kind == DeviceKind::kCuda ? "GPU" : "CPU",
                       kind == DeviceKind::kCuda ? " (the CUDA plugin was built without NCCL)" : "");
  return it->second(std::move(host), device_index);
}

CommunicatorRegistrar::CommunicatorRegistrar(const std::string& backend, CommunicatorFactory factory) {
  backends()[backend] = std::move(factory);
}

Result<std::shared_ptr<Communicator>> job_communicator() {
  static std::mutex mu;
  static std::shared_ptr<Communicator> made;
  std::lock_guard<std::mutex> lock(mu);
  if (made) return made;
  LaunchInfo info = launch_info_from_environment();
  if (info.size <= 1) {
    made = std::make_shared<SingleProcess>();
    return made;
  }
  constexpr const char* kPlugin = ORT_TRAIN_MPI_PLUGIN;  // "" when this build has none (CMakeLists.txt)
  std::string why = *kPlugin ? load_plugin(kPlugin, "ORT_TRAIN_MPI_PLUGIN")
                             : "this build of ort_train has no MPI support (MPI was not found when it was built)";
  auto it = backends().find("mpi");
  if (it == backends().end())
    return unsupported("{} started {} processes, but data-parallel training cannot start: {}", info.launcher,
                       info.size, why);
  ASSIGN_OR_RETURN(made, it->second(info));
  return made;
}

}  // namespace ort_train
