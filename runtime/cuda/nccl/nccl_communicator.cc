// The NCCL communicator (built into the CUDA plugin when nccl.h and libnccl
// are found): collectives on device tensors; host tensors and the bootstrap
// go through the job's MPI communicator. Blocking collectives are queued on
// the compute stream, after the kernels that wrote their tensors. The
// non-blocking allreduce (the gradient buckets') runs on a stream of its own,
// so a bucket is summed while the backward's kernels go on: it waits for an
// event recorded on the compute stream when the bucket's last gradient was
// queued, and its wait() makes the compute stream wait for it in turn (the
// host never blocks), the design of PyTorch DDP's reducer on NCCL. Written
// and compiled without a machine with two GPUs: never run.
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/communicator.h"
#include "runtime/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"

namespace ort_train::cuda {
namespace {

Result<ncclDataType_t> nccl_type(DType t) {
  switch (t) {
    case DType::kFloat: return ncclFloat32;
    case DType::kDouble: return ncclFloat64;
    case DType::kInt64: return ncclInt64;
    case DType::kFloat16: return ncclFloat16;
    case DType::kBFloat16: return ncclBfloat16;
    default: return invalid_argument("NCCL collectives take float or int64 tensors, not {}", dtype_name(t));
  }
}

#define NCCL_RETURN_IF_ERROR(expr, what)                                                                   \
  do {                                                                                                     \
    ncclResult_t nccl_rc_ = (expr);                                                                        \
    if (nccl_rc_ != ncclSuccess)                                                                           \
      return make_error(ErrorCode::kInternal, "NCCL {}: {}", what, ncclGetErrorString(nccl_rc_));          \
  } while (0)

// Closes a group whose calls returned `queued`: ncclGroupEnd runs even after
// a failed call (NCCL's group stays open otherwise, and the next collective
// would join it); the first error is the one reported.
Status end_group(ncclResult_t queued, const char* what) {
  ncclResult_t ended = ncclGroupEnd();
  NCCL_RETURN_IF_ERROR(queued, what);
  NCCL_RETURN_IF_ERROR(ended, what);
  return Status::Ok();
}

// A queued NCCL collective: finished when the compute stream reaches it.
class StreamRequest : public CommRequest {
 public:
  bool test() override { return cudaStreamQuery(context().compute) == cudaSuccess; }
  Status wait() override {
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(context().compute));
    return Status::Ok();
  }
};

// A collective on the communication stream: finished when its event has
// fired; wait() orders the compute stream after it.
class EventRequest : public CommRequest {
 public:
  explicit EventRequest(cudaEvent_t done) : done_(done) {}
  ~EventRequest() override { cudaEventDestroy(done_); }  // released by CUDA once it has fired
  bool test() override { return cudaEventQuery(done_) == cudaSuccess; }
  Status wait() override {
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(context().compute, done_, 0));
    return Status::Ok();
  }

 private:
  cudaEvent_t done_;
};

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(std::shared_ptr<Communicator> host, ncclComm_t comm, cudaStream_t comm_stream)
      : host_(std::move(host)), comm_(comm), comm_stream_(comm_stream) {}
  ~NcclCommunicator() override {
    ncclCommDestroy(comm_);
    cudaStreamDestroy(comm_stream_);
  }
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string backend() const override {
    int v = 0;
    ncclGetVersion(&v);
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + " over " + host_->backend();
  }
  Status allreduce_sum(const Tensor& t) override {
    if (t.device() != DeviceKind::kCuda) return host_->allreduce_sum(t);
    ASSIGN_OR_RETURN(ncclDataType_t type, nccl_type(t.dtype()));
    // NCCL's ring order is fixed for a given communicator and size, so runs repeat bit for bit.
    NCCL_RETURN_IF_ERROR(ncclAllReduce(t.raw(), t.raw(), static_cast<size_t>(t.numel()), type, ncclSum, comm_,
                                       context().compute),
                         "allreduce");
    return Status::Ok();
  }
  Result<std::unique_ptr<CommRequest>> iallreduce_sum(const Tensor& t) override {
    if (t.device() != DeviceKind::kCuda) return host_->iallreduce_sum(t);
    ASSIGN_OR_RETURN(ncclDataType_t type, nccl_type(t.dtype()));
    cudaEvent_t ready = nullptr, done = nullptr;
    CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(ready, context().compute));  // t's last write is queued before this
    CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(comm_stream_, ready, 0));
    cudaEventDestroy(ready);
    NCCL_RETURN_IF_ERROR(ncclAllReduce(t.raw(), t.raw(), static_cast<size_t>(t.numel()), type, ncclSum, comm_,
                                       comm_stream_),
                         "allreduce");
    CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CUDA_RETURN_IF_ERROR(cudaEventRecord(done, comm_stream_));
    return std::unique_ptr<CommRequest>(new EventRequest(done));
  }
  void set_ordered_sums(bool on) override { host_->set_ordered_sums(on); }
  bool ordered_sums() const override { return host_->ordered_sums(); }
  void set_timeout(double seconds) override { host_->set_timeout(seconds); }
  Status reduce_scatter_sum(const Tensor& t, const std::vector<int64_t>& counts) override {
    if (t.device() != DeviceKind::kCuda) return host_->reduce_scatter_sum(t, counts);
    ASSIGN_OR_RETURN(ncclDataType_t type, nccl_type(t.dtype()));
    size_t elem = dtype_size(t.dtype());
    int64_t at = 0;
    // ncclReduceScatter takes equal ranges; ZeRO's may differ by one element,
    // so each range is reduced to its owner, and the others' ranges are left
    // as they were (NCCL ignores a non-root's receive buffer).
    NCCL_RETURN_IF_ERROR(ncclGroupStart(), "reduce-scatter");
    ncclResult_t queued = ncclSuccess;
    for (size_t r = 0; r < counts.size() && queued == ncclSuccess; ++r) {
      void* p = static_cast<char*>(t.raw()) + static_cast<size_t>(at) * elem;
      queued = ncclReduce(p, p, static_cast<size_t>(counts[r]), type, ncclSum, static_cast<int>(r), comm_,
                          context().compute);
      at += counts[r];
    }
    return end_group(queued, "reduce-scatter");
  }
  Status allgather(const Tensor& t, const std::vector<int64_t>& counts) override {
    if (t.device() != DeviceKind::kCuda) return host_->allgather(t, counts);
    ASSIGN_OR_RETURN(ncclDataType_t type, nccl_type(t.dtype()));
    size_t elem = dtype_size(t.dtype());
    int64_t at = 0;
    NCCL_RETURN_IF_ERROR(ncclGroupStart(), "all-gather");
    ncclResult_t queued = ncclSuccess;
    for (size_t r = 0; r < counts.size() && queued == ncclSuccess; ++r) {  // each range broadcast from its owner
      void* p = static_cast<char*>(t.raw()) + static_cast<size_t>(at) * elem;
      queued = ncclBroadcast(p, p, static_cast<size_t>(counts[r]), type, static_cast<int>(r), comm_, context().compute);
      at += counts[r];
    }
    return end_group(queued, "all-gather");
  }
  Status broadcast(const Tensor& t, int root) override {
    if (t.device() != DeviceKind::kCuda) return host_->broadcast(t, root);
    ASSIGN_OR_RETURN(ncclDataType_t type, nccl_type(t.dtype()));
    NCCL_RETURN_IF_ERROR(ncclBroadcast(t.raw(), t.raw(), static_cast<size_t>(t.numel()), type, root, comm_,
                                       context().compute),
                         "broadcast");
    return Status::Ok();
  }
  Status barrier() override { return host_->barrier(); }
  // Device tensors: the collective is queued on the compute stream, done when the stream gets there.
  Result<std::unique_ptr<CommRequest>> ireduce_scatter_sum(const Tensor& t, const std::vector<int64_t>& counts) override {
    if (t.device() != DeviceKind::kCuda) return host_->ireduce_scatter_sum(t, counts);
    RETURN_IF_ERROR(reduce_scatter_sum(t, counts));
    return std::unique_ptr<CommRequest>(new StreamRequest());
  }
  Result<std::unique_ptr<CommRequest>> iallgather(const Tensor& t, const std::vector<int64_t>& counts) override {
    if (t.device() != DeviceKind::kCuda) return host_->iallgather(t, counts);
    RETURN_IF_ERROR(allgather(t, counts));
    return std::unique_ptr<CommRequest>(new StreamRequest());
  }
  Result<std::unique_ptr<CommRequest>> ibroadcast(const Tensor& t, int root) override {
    if (t.device() != DeviceKind::kCuda) return host_->ibroadcast(t, root);
    RETURN_IF_ERROR(broadcast(t, root));
    return std::unique_ptr<CommRequest>(new StreamRequest());
  }
  Result<std::unique_ptr<CommRequest>> ibarrier() override { return host_->ibarrier(); }
  [[noreturn]] void abort(int code) override {
    ncclCommAbort(comm_);
    host_->abort(code);
    std::_Exit(code);  // abort does not return; this says so to the compiler
  }

 private:
  std::shared_ptr<Communicator> host_;
  ncclComm_t comm_;
  cudaStream_t comm_stream_;
};

Result<std::shared_ptr<Communicator>> make_nccl(std::shared_ptr<Communicator> host, int device_index) {
  CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index));
  // Rank 0 makes the unique id; the host communicator (MPI) carries it to the others.
  ncclUniqueId id;
  Tensor packed = Tensor::host(DType::kInt64, {static_cast<int64_t>((sizeof(id) + 7) / 8)});
  if (host->rank() == 0) {
    NCCL_RETURN_IF_ERROR(ncclGetUniqueId(&id), "unique id");
    std::memcpy(packed.raw(), &id, sizeof(id));
  }
  RETURN_IF_ERROR(host->broadcast(packed, 0));
  std::memcpy(&id, packed.raw(), sizeof(id));
  ncclComm_t comm = nullptr;
  NCCL_RETURN_IF_ERROR(ncclCommInitRank(&comm, host->size(), id, host->rank()), "init");
  cudaStream_t comm_stream = nullptr;
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&comm_stream, cudaStreamNonBlocking));
  return std::shared_ptr<Communicator>(std::make_shared<NcclCommunicator>(std::move(host), comm, comm_stream));
}

const DeviceCommunicatorRegistrar kRegistrar(DeviceKind::kCuda, make_nccl);

}  // namespace
}  // namespace ort_train::cuda
