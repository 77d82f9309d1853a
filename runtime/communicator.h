// Communication between the processes of one data-parallel job. A job is
// launched by mpirun or srun; each process (rank) trains a replica of the
// model on its own micro-batches, and the ranks sum their gradients with
// collectives over the parameter store's flat buffers. The MPI backend lives
// in a plugin (libort_train_mpi.so, runtime/mpi/) loaded only when a launcher
// started more than one process, so a plain `ort_train` never starts MPI.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/status.h"
#include "graph/tensor.h"

namespace ort_train {

// Where this process sits in its job, from the launcher's environment
// (OpenMPI's OMPI_COMM_WORLD_*, PMIx's PMIX_*, PMI's PMI_*, Slurm's SLURM_*).
struct LaunchInfo {
  int rank = 0;
  int size = 1;
  int local_rank = 0;     // among the ranks on this node: which GPU to take
  int local_size = 1;     // ranks on this node, which share its cores
  std::string launcher;   // "mpirun", "srun", "pmi", or "" when not launched
};
LaunchInfo launch_info_from_environment();

// A collective started without waiting (Communicator::iallreduce_sum).
class CommRequest {
 public:
  virtual ~CommRequest() = default;
  // Whether it has finished; calling it also lets MPI make progress, so the
  // trainer calls it while the backward pass runs.
  virtual bool test() = 0;
  virtual Status wait() = 0;
};

// A request whose collective finished before it was returned (a single
// process, or a communicator that runs its non-blocking calls blocking).
std::unique_ptr<CommRequest> finished_request();

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "single process", "MPI (Open MPI v4.1.4)"
  // In place: t becomes the element-wise sum of every rank's t (host float32,
  // float64 or int64, the same size on every rank).
  virtual Status allreduce_sum(const Tensor& t) = 0;
  // allreduce_sum started now and finished by the request's wait(); t must
  // stay alive and untouched until then.
  virtual Result<std::unique_ptr<CommRequest>> iallreduce_sum(const Tensor& t) = 0;
  // Sums in rank order, ((r0 + r1) + r2) + ..., the order one process adds
  // micro-batches in, so runs repeat bit for bit (--deterministic); slower:
  // a chain through the ranks, and iallreduce_sum waits at once.
  virtual void set_ordered_sums(bool on) = 0;
  virtual bool ordered_sums() const = 0;
  // A collective (or a wait for one) that takes longer than `seconds` ends
  // the process with a message naming it, and with it the job (--comm-timeout):
  // a rank that stopped responding must not leave the others waiting forever.
  // 0 waits forever.
  virtual void set_timeout(double seconds) = 0;
  // ZeRO: t is split into consecutive ranges, counts[r] elements for rank r.
  // reduce_scatter_sum leaves in this rank's range the sum over ranks of that
  // range (the other ranges are left as they were); allgather fills every
  // range with its owner's values.
  virtual Status reduce_scatter_sum(const Tensor& t, const std::vector<int64_t>& counts) = 0;
  virtual Status allgather(const Tensor& t, const std::vector<int64_t>& counts) = 0;
  // Non-blocking forms of the other collectives: started now, finished by the
  // request's wait(); the tensors must stay alive and untouched until then.
  virtual Result<std::unique_ptr<CommRequest>> ireduce_scatter_sum(const Tensor& t,
                                                                    const std::vector<int64_t>& counts) = 0;
  virtual Result<std::unique_ptr<CommRequest>> iallgather(const Tensor& t, const std::vector<int64_t>& counts) = 0;
  virtual Result<std::unique_ptr<CommRequest>> ibroadcast(const Tensor& t, int root) = 0;
  virtual Result<std::unique_ptr<CommRequest>> ibarrier() = 0;
  // In place: every rank's t becomes root's t.
  virtual Status broadcast(const Tensor& t, int root) = 0;
  virtual Status barrier() = 0;
  // Ends every process of the job with `code`: a rank that fails must not
  // leave the others waiting in a collective. Does not return.
  [[noreturn]] virtual void abort(int code) = 0;
};

// Backends register themselves by name ("mpi") from their plugin.
using CommunicatorFactory = std::function<Result<std::shared_ptr<Communicator>>(const LaunchInfo&)>;
struct CommunicatorRegistrar {
  CommunicatorRegistrar(const std::string& backend, CommunicatorFactory factory);
};

// GPU data parallelism: a communicator whose collectives take tensors on a
// device of one kind, the library that kind brings for it (NCCL for CUDA,
// registered by the CUDA plugin when it is built with NCCL). It is built over
// the job's host communicator, which carries its bootstrap (NCCL's unique id)
// and every host-tensor collective.
using DeviceCommunicatorFactory =
    std::function<Result<std::shared_ptr<Communicator>>(std::shared_ptr<Communicator> host, int device_index)>;
struct DeviceCommunicatorRegistrar {
  DeviceCommunicatorRegistrar(DeviceKind kind, DeviceCommunicatorFactory factory);
};
// The device communicator of `kind` over `host`, or an error saying why
// there is none (kUnsupported: this build has none for that kind).
Result<std::shared_ptr<Communicator>> device_communicator(DeviceKind kind, std::shared_ptr<Communicator> host,
                                                          int device_index);

// The job's communicator, made once per process: MPI when a launcher started
// more than one process, else a single-process one whose collectives leave
// the tensors as they are. An error when the job needs MPI and this build or
// machine cannot give it.
Result<std::shared_ptr<Communicator>> job_communicator();

}  // namespace ort_train
