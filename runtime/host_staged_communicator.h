// A communicator for device tensors over one that sums host memory (MPI):
// each collective copies the tensor to the host, runs there, and copies the
// result back. GPU ranks without NCCL reduce their gradients through it. Its
// non-blocking calls finish before they return: nothing overlaps, so the
// trainer gives it no buckets to start during the backward.
#pragma once
#include <memory>

#include "runtime/communicator.h"
#include "runtime/device.h"

namespace ort_train {

std::shared_ptr<Communicator> host_staged(std::shared_ptr<Communicator> host, std::shared_ptr<Device> device);

}  // namespace ort_train
