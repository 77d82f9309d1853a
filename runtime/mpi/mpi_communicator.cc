// The MPI backend of the Communicator (libort_train_mpi.so, loaded by
// job_communicator() only under a launcher with more than one process).
// Collectives run on host tensors; MPI is initialized on load of the first
// communicator and finalized at exit.
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "numerics/float16.h"
#include "runtime/communicator.h"

namespace ort_train {
namespace {

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, static_cast<size_t>(len));
}

Result<MPI_Datatype> mpi_type(DType t) {
  switch (t) {
    case DType::kFloat: return MPI_FLOAT;
    case DType::kDouble: return MPI_DOUBLE;
    case DType::kInt64: return MPI_INT64_T;
    case DType::kBFloat16: return MPI_UINT16_T;  // its bits; sums go through bf16_sum
    default:
      return invalid_argument("MPI collectives take float32, float64, int64 or bfloat16 tensors, not {}",
                              dtype_name(t));
  }
}

// MPI has no bfloat16: its sums (--allreduce-dtype bf16's gradients) add in
// float32 and round to nearest even at each step of MPI's reduction, as
// NCCL's bfloat16 sum does.
void bf16_sum(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const BFloat16*>(in);
  auto* b = static_cast<BFloat16*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = BFloat16(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

// The reduction op for a dtype's sums (created on first use, after MPI_Init).
MPI_Op sum_op(DType t) {
  if (t != DType::kBFloat16) return MPI_SUM;
  static MPI_Op op = [] {
    MPI_Op made;
    MPI_Op_create(&bf16_sum, 1, &made);
    return made;
  }();
  return op;
}

// Ends the process when a collective runs past the timeout. MPI cannot be
// called from this thread (MPI_THREAD_FUNNELED), so it prints and exits;
// mpirun then ends the other ranks.
class Watchdog {
 public:
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void set_timeout(double seconds, int rank, int size) {
    std::lock_guard<std::mutex> lock(mu_);
    timeout_ = seconds;
    rank_ = rank;
    size_ = size;
    if (seconds > 0 && !thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  // Marks a collective in progress for as long as it lives.
  class Scope {
   public:
    Scope(Watchdog& w, const char* op) : w_(w) {
      std::lock_guard<std::mutex> lock(w_.mu_);
      w_.op_ = op;
      w_.started_ = std::chrono::steady_clock::now();
    }
    ~Scope() {
      std::lock_guard<std::mutex> lock(w_.mu_);
      w_.op_ = nullptr;
    }

   private:
    Watchdog& w_;
  };

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      wake_.wait_for(lock, std::chrono::milliseconds(200));
      if (!op_ || timeout_ <= 0) continue;
      double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
      if (waited <= timeout_) continue;
      std::fprintf(stderr,
                   "ort_train: error on rank %d of %d: MPI %s did not finish within %g s (--comm-timeout): "
                   "another rank stopped responding or died\n",
                   rank_, size_, op_, timeout_);
      std::fflush(stderr);
      std::_Exit(4);
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::thread thread_;
  bool stop_ = false;
  double timeout_ = 0;
  int rank_ = 0, size_ = 1;
  const char* op_ = nullptr;
  std::chrono::steady_clock::time_point started_;
};

class MpiRequest : public CommRequest {
 public:
  // `finish` runs once the collective is done (copying a reduce-scatter's result into place).
  MpiRequest(MPI_Request r, Watchdog& watchdog, std::function<void()> finish = nullptr)
      : request_(r), watchdog_(watchdog), finish_(std::move(finish)) {}
  ~MpiRequest() override {
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);  // never leave MPI writing into freed memory
  }
  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
    if (done) run_finish();
    return done != 0;
  }
  Status wait() override {
    Watchdog::Scope watch(watchdog_, "a non-blocking collective");
    int rc = MPI_Wait(&request_, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return make_error(ErrorCode::kInternal, "MPI collective: {}", mpi_error(rc));
    run_finish();
    return Status::Ok();
  }

 private:
  void run_finish() {
    if (finish_) finish_();
    finish_ = nullptr;
  }
  MPI_Request request_;
  Watchdog& watchdog_;
  std::function<void()> finish_;
};

// A request whose work was done when it was made (ordered sums).
class Finished : public CommRequest {
 public:
  explicit Finished(Status s) : status_(std::move(s)) {}
  bool test() override { return true; }
  Status wait() override { return status_; }

 private:
  Status status_;
};

// Element-wise acc = partial + mine: the chain's step, in that order so the
// sum groups as ((r0 + r1) + r2) + ..., like one process's accumulation.
template <typename T>
void add_after(const void* partial, void* mine, int n) {
  const T* p = static_cast<const T*>(partial);
  T* m = static_cast<T*>(mine);
  for (int i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, BFloat16>) m[i] = BFloat16(static_cast<float>(p[i]) + static_cast<float>(m[i]));
    else m[i] = p[i] + m[i];
  }
}

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(int rank, int size, std::string version) : rank_(rank), size_(size), version_(std::move(version)) {}
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "MPI (" + version_ + ")"; }

  Status allreduce_sum(const Tensor& t) override {
    RETURN_IF_ERROR(check_host(t, "allreduce"));
    ASSIGN_OR_RETURN(MPI_Datatype type, mpi_type(t.dtype()));
    Watchdog::Scope watch(watchdog_, "allreduce");
    if (ordered_) return ordered_sum(t, type);
    return chunked(t, [&](void* p, int n) { return MPI_Allreduce(MPI_IN_PLACE, p, n, type, sum_op(t.dtype()), MPI_COMM_WORLD); },
                   "allreduce");
  }
  Result<std::unique_ptr<CommRequest>> iallreduce_sum(const Tensor& t) override {
    RETURN_IF_ERROR(check_host(t, "allreduce"));
    ASSIGN_OR_RETURN(MPI_Datatype type, mpi_type(t.dtype()));
    if (ordered_ || t.numel() > (int64_t{1} << 30))
      return std::unique_ptr<CommRequest>(new Finished(allreduce_sum(t)));
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, t.raw(), static_cast<int>(t.numel()), type, sum_op(t.dtype()), MPI_COMM_WORLD,
                            &request);
    if (rc != MPI_SUCCESS) return make_error(ErrorCode::kInternal, "MPI allreduce: {}", mpi_error(rc));
    return std::unique_ptr<CommRequest>(new MpiRequest(request, watchdog_));
  }
  void set_ordered_sums(bool on) override { ordered_ = on; }
  bool ordered_sums() const override { return ordered_; }
  Status reduce_scatter_sum(const Tensor& t, const std::vector<int64_t>& counts) override {
    if (ordered_) return allreduce_sum(t);  // the rank-ordered sum of everything is exact; a superset
    RETURN_IF_ERROR(check_host(t, "reduce-scatter"));
    ASSIGN_OR_RETURN(MPI_Datatype type, mpi_type(t.dtype()));
    ASSIGN_OR_RETURN(auto layout, int_layout(t, counts));
    size_t elem = dtype_size(t.dtype());
    std::vector<char> mine(static_cast<size_t>(layout.first[static_cast<size_t>(rank_)]) * elem);
    Watchdog::Scope watch(watchdog_, "reduce-scatter");
    int rc = MPI_Reduce_scatter(t.raw(), mine.data(), layout.first.data(), type, sum_op(t.dtype()), MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return make_error(ErrorCode::kInternal, "MPI reduce-scatter: {}", mpi_error(rc));
    if (!mine.empty())  // a rank may own none of it (a ZeRO-2 bucket): memcpy from no buffer is undefined
      std::memcpy(static_cast<char*>(t.raw()) + static_cast<size_t>(layout.second[static_cast<size_t>(rank_)]) * elem,
                  mine.data(), mine.size());
    return Status::Ok();
  }
  Result<std::unique_ptr<CommRequest>> ireduce_scatter_sum(const Tensor& t,
                                                            const std::vector<int64_t>& counts) override {
    if (ordered_) return std::unique_ptr<CommRequest>(new Finished(reduce_scatter_sum(t, counts)));
    RETURN_IF_ERROR(check_host(t, "reduce-scatter"));
    ASSIGN_OR_RETURN(MPI_Datatype type, mpi_type(t.dtype()));
    ASSIGN_OR_RETURN(auto layout, int_layout(t, counts));
    size_t elem = dtype_size(t.dtype());
    auto mine = std::make_shared<std::vector<char>>(static_cast<size_t>(layout.first[static_cast<size_t>(rank_)]) * elem);
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = MPI_Ireduce_scatter(t.raw(), mine->data(), layout.first.data(), type, sum_op(t.dtype()), MPI_COMM_WORLD,
                                 &request);
    if (rc != MPI_SUCCESS) return make_error(ErrorCode::kInternal, "MPI reduce-scatter: {}", mpi_error(rc));
    char* dest = static_cast<char*>(t.raw()) + static_cast<size_t>(layout.second[static_cast<size_t>(rank_)]) * elem;
    return std::unique_ptr<CommRequest>(
        new MpiRequest(request, watchdog_, [mine, dest] {
          if (!mine->empty()) std::memcpy(dest, mine->data(), mine->size());
        }));
  }
  Result<std::unique_ptr<CommRequest>> iallgather(const Tensor& t, const std::vector<int64_t>& counts) override {
    RETURN_IF_ERROR(check_host(t, "all-gather"));
    ASSIGN_OR_RETURN(MPI_Datatype type, mpi_type(t.dtype()));
    ASSIGN_OR_RETURN(auto layout, int_layout(t, counts));
    // MPI reads the count arrays until the collective completes: the request owns them.
    auto held = std::make_shared<std::pair<std::vector<int>, std::vector<int>>>(std::move(layout));
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, t.raw(), held->first.data(), held->second.data(), type,
                             MPI_COMM_WORLD, &request);
    if (rc != MPI_SUCCESS) return make_error(ErrorCode::kInternal, "MPI all-gather: {}", mpi_error(rc));
    return std::unique_ptr<CommRequest>(new MpiRequest(request, watchdog_, [held] {}));
  }
  Result<std::unique_ptr<CommRequest>> ibroadcast(const Tensor& t, int root) override {
    RETURN_IF_ERROR(check_host(t, "broadcast"));
    ASSIGN_OR_RETURN(MPI_Datatype type, mpi_type(t.dtype()));
    if (t.numel() > (int64_t{1} << 30)) return std::unique_ptr<CommRequest>(new Finished(broadcast(t, root)));
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = MPI_Ibcast(t.raw(), static_cast<int>(t.numel()), type, root, MPI_COMM_WORLD, &request);
    if (rc != MPI_SUCCESS) return make_error(ErrorCode::kInternal, "MPI broadcast: {}", mpi_error(rc));
    return std::unique_ptr<CommRequest>(new MpiRequest(request, watchdog_));
  }
  Result<std::unique_ptr<CommRequest>> ibarrier() override {
    MPI_Request request = MPI_REQUEST_NULL;
    int rc = MPI_Ibarrier(MPI_COMM_WORLD, &request);
    if (rc != MPI_SUCCESS) return make_error(ErrorCode::kInternal, "MPI barrier: {}", mpi_error(rc));
    return std::unique_ptr<CommRequest>(new MpiRequest(request, watchdog_));
  }
  Status allgather(const Tensor& t, const std::vector<int64_t>& counts) override {
    RETURN_IF_ERROR(check_host(t, "all-gather"));
    ASSIGN_OR_RETURN(MPI_Datatype type, mpi_type(t.dtype()));
    ASSIGN_OR_RETURN(auto layout, int_layout(t, counts));
    Watchdog::Scope watch(watchdog_, "all-gather");
    int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, t.raw(), layout.first.data(), layout.second.data(),
                            type, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? Status::Ok() : make_error(ErrorCode::kInternal, "MPI all-gather: {}", mpi_error(rc));
  }
  void set_timeout(double seconds) override { watchdog_.set_timeout(seconds, rank_, size_); }
  Status broadcast(const Tensor& t, int root) override {
    RETURN_IF_ERROR(check_host(t, "broadcast"));
    ASSIGN_OR_RETURN(MPI_Datatype type, mpi_type(t.dtype()));
    Watchdog::Scope watch(watchdog_, "broadcast");
    return chunked(t, [&](void* p, int n) { return MPI_Bcast(p, n, type, root, MPI_COMM_WORLD); }, "broadcast");
  }
  Status barrier() override {
    Watchdog::Scope watch(watchdog_, "barrier");
    int rc = MPI_Barrier(MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? Status::Ok() : make_error(ErrorCode::kInternal, "MPI barrier: {}", mpi_error(rc));
  }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);  // MPI_Abort should not return
  }

 private:
  // MPI's int counts and displacements for a split of t.
  Result<std::pair<std::vector<int>, std::vector<int>>> int_layout(const Tensor& t,
                                                                   const std::vector<int64_t>& counts) const {
    if (static_cast<int>(counts.size()) != size_)
      return invalid_argument("a split over {} ranks has {} parts", size_, counts.size());
    std::vector<int> c, d;
    int64_t at = 0;
    for (int64_t n : counts) {
      if (n < 0 || at + n > t.numel() || at + n > (int64_t{1} << 31) - 1)
        return invalid_argument("a split of {} elements does not fit MPI's int counts", t.numel());
      c.push_back(static_cast<int>(n));
      d.push_back(static_cast<int>(at));
      at += n;
    }
    return std::make_pair(c, d);
  }
  static Status check_host(const Tensor& t, const char* what) {
    if (t.defined() && t.device() != DeviceKind::kCpu)
      return invalid_argument("MPI {}: the tensor must be on the host", what);
    return Status::Ok();
  }
  // MPI counts are ints: large buffers go in chunks of at most 2^30 elements.
  template <typename F>
  Status chunked(const Tensor& t, F&& op, const char* what) {
    constexpr int64_t kChunk = int64_t{1} << 30;
    size_t elem = dtype_size(t.dtype());
    auto* base = static_cast<char*>(t.raw());
    for (int64_t done = 0; done < t.numel(); done += kChunk) {
      int n = static_cast<int>(std::min(kChunk, t.numel() - done));
      int rc = op(base + static_cast<size_t>(done) * elem, n);
      if (rc != MPI_SUCCESS) return make_error(ErrorCode::kInternal, "MPI {}: {}", what, mpi_error(rc));
    }
    return Status::Ok();
  }

  // The rank-ordered sum: a chain 0 -> 1 -> ... -> N-1 where each rank adds
  // its values after the partial sum it receives, then the last rank
  // broadcasts the total.
  Status ordered_sum(const Tensor& t, MPI_Datatype type) {
    size_t elem = dtype_size(t.dtype());
    std::vector<char> partial;
    return chunked(t, [&](void* p, int n) {
      int rc = MPI_SUCCESS;
      if (rank_ > 0) {
        partial.resize(static_cast<size_t>(n) * elem);
        rc = MPI_Recv(partial.data(), n, type, rank_ - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) return rc;
        if (t.dtype() == DType::kFloat) add_after<float>(partial.data(), p, n);
        else if (t.dtype() == DType::kDouble) add_after<double>(partial.data(), p, n);
        else if (t.dtype() == DType::kBFloat16) add_after<BFloat16>(partial.data(), p, n);
        else add_after<int64_t>(partial.data(), p, n);
      }
      if (rank_ + 1 < size_) rc = MPI_Send(p, n, type, rank_ + 1, 0, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) return rc;
      return MPI_Bcast(p, n, type, size_ - 1, MPI_COMM_WORLD);
    }, "ordered allreduce");
  }

  int rank_, size_;
  std::string version_;
  bool ordered_ = false;
  Watchdog watchdog_;
};

// srun starts tasks through the interface its --mpi names (SLURM_MPI_TYPE).
// Open MPI speaks Slurm's PMI-1/PMI-2 only through its s1/s2 components,
// which a build without Slurm's PMI library (Debian's) lacks: its MPI_Init
// would print a page per rank and abort. Said once here instead, when the
// component folder beside libmpi shows no such component.
Status check_slurm_interface() {
#if defined(OPEN_MPI) && OPEN_MPI
  const char* type = std::getenv("SLURM_MPI_TYPE");
  if (!type || std::getenv("PMIX_RANK") || std::string(type).rfind("pmix", 0) == 0) return Status::Ok();
  Dl_info where{};
  if (!dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &where) || !where.dli_fname) return Status::Ok();
  namespace fs = std::filesystem;
  fs::path lib = fs::path(where.dli_fname).parent_path();
  std::error_code ec;
  for (const char* folder : {"openmpi", "openmpi3"})
    for (const char* component : {"mca_pmix_s1.so", "mca_pmix_s2.so"})
      if (fs::exists(lib / folder / component, ec)) return Status::Ok();
  if (!fs::exists(lib / "openmpi", ec) && !fs::exists(lib / "openmpi3", ec)) return Status::Ok();  // not known: let MPI try
  return unsupported("srun --mpi={} started this rank, but the Open MPI this build uses ({}) reaches Slurm only "
                     "through PMIx: start the ranks with `srun --mpi=pmix` (`srun --mpi=list` shows what this Slurm "
                     "offers)",
                     type, where.dli_fname);
#else
  return Status::Ok();
#endif
}

Result<std::shared_ptr<Communicator>> make_mpi(const LaunchInfo& info) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    RETURN_IF_ERROR(check_slurm_interface());
    int provided = 0;
    // Collectives are called from the training thread only.
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return make_error(ErrorCode::kInternal, "MPI_Init failed: {}", mpi_error(rc));
  }
  // Errors come back as codes (reported with the operation), not as an abort inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size == 1 && info.size > 1 && info.launcher == "srun")
    // A batch script's own process inherits SLURM_NTASKS and SLURM_PROCID=0 without being one of srun's tasks.
    return invalid_argument("Slurm's variables say this is task {} of {} (SLURM_PROCID, SLURM_NTASKS), but no launcher "
                            "started it: inside an sbatch script, start the ranks with `srun --mpi=pmix ort_train "
                            "...` (or unset SLURM_NTASKS to run one process)",
                            info.rank, info.size);
  if (size != info.size || rank != info.rank)
    return make_error(ErrorCode::kInternal, "MPI says rank {} of {}, the launcher's environment ({}) rank {} of {}",
                      rank, size, info.launcher, info.rank, info.size);
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  std::string v(version, static_cast<size_t>(len));
  v = v.substr(0, v.find(','));
  return std::shared_ptr<Communicator>(std::make_shared<MpiCommunicator>(rank, size, v));
}

const CommunicatorRegistrar kRegistrar("mpi", make_mpi);

}  // namespace
}  // namespace ort_train
