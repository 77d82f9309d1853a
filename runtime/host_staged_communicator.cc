#include "runtime/host_staged_communicator.h"

#include <cstdlib>

namespace ort_train {

namespace {

class HostStaged : public Communicator {
 public:
  HostStaged(std::shared_ptr<Communicator> host, std::shared_ptr<Device> device)
      : host_(std::move(host)), device_(std::move(device)) {}
  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string backend() const override { return host_->backend() + ", through host memory"; }
  void set_ordered_sums(bool on) override { host_->set_ordered_sums(on); }
  bool ordered_sums() const override { return host_->ordered_sums(); }
  void set_timeout(double seconds) override { host_->set_timeout(seconds); }
  [[noreturn]] void abort(int code) override {
    host_->abort(code);
    std::abort();  // not reached: the host communicator ends the job
  }
  Status barrier() override { return host_->barrier(); }

  Status allreduce_sum(const Tensor& t) override {
    return staged(t, [&](const Tensor& h) { return host_->allreduce_sum(h); });
  }
  Status reduce_scatter_sum(const Tensor& t, const std::vector<int64_t>& counts) override {
    return staged(t, [&](const Tensor& h) { return host_->reduce_scatter_sum(h, counts); });
  }
  Status allgather(const Tensor& t, const std::vector<int64_t>& counts) override {
    return staged(t, [&](const Tensor& h) { return host_->allgather(h, counts); });
  }
  Status broadcast(const Tensor& t, int root) override {
    return staged(t, [&](const Tensor& h) { return host_->broadcast(h, root); });
  }
  Result<std::unique_ptr<CommRequest>> iallreduce_sum(const Tensor& t) override { return finished(allreduce_sum(t)); }
  Result<std::unique_ptr<CommRequest>> ireduce_scatter_sum(const Tensor& t,
                                                           const std::vector<int64_t>& counts) override {
    return finished(reduce_scatter_sum(t, counts));
  }
  Result<std::unique_ptr<CommRequest>> iallgather(const Tensor& t, const std::vector<int64_t>& counts) override {
    return finished(allgather(t, counts));
  }
  Result<std::unique_ptr<CommRequest>> ibroadcast(const Tensor& t, int root) override {
    return finished(broadcast(t, root));
  }
  Result<std::unique_ptr<CommRequest>> ibarrier() override { return finished(barrier()); }

 private:
  template <typename Op>
  Status staged(const Tensor& t, Op op) {
    if (t.device() == DeviceKind::kCpu) return op(t);
    ASSIGN_OR_RETURN(Tensor h, to_host(*device_, t));
    RETURN_IF_ERROR(op(h));
    return device_->copy(h, t);
  }
  static Result<std::unique_ptr<CommRequest>> finished(const Status& st) {
    if (!st.ok()) return st;
    return finished_request();
  }
  std::shared_ptr<Communicator> host_;
  std::shared_ptr<Device> device_;
};

}  // namespace

std::shared_ptr<Communicator> host_staged(std::shared_ptr<Communicator> host, std::shared_ptr<Device> device) {
  return std::make_shared<HostStaged>(std::move(host), std::move(device));
}

}  // namespace ort_train
