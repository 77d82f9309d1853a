// The kernels of If, Loop and Scan (explicit form, graph/control_flow.h; shape
// rules in graph/ops/control_flow.cc), written once for every device: the CPU
// registers them in runtime/cpu/kernels/control_flow.cc, the GPU in
// runtime/cuda/kernels/control_flow.cc. Each runs its subgraphs through an
// Executor of its own on the node's device, planned once per subgraph, device
// and input signature and kept (a Loop's body is planned once, not per trip).
// The decisions (a condition, a trip count, sequence lengths) are read on the
// host, which on a GPU waits for the value, as PyTorch's control flow does;
// per-trip slices and stacks are device copies.
#pragma once
#include "runtime/kernel.h"

namespace ort_train {

// Each runs on ctx.device() (the CPU when it is null).
Status if_kernel(KernelContext& ctx);
Status loop_kernel(KernelContext& ctx);
Status scan_kernel(KernelContext& ctx);

// Called by the executor after every kernel it runs: inside an If/Loop/Scan
// body, adds the kernel's work to the outermost node's (graph/control_flow.h's
// max_loop_work); nothing outside control flow.
void note_control_flow_work(const KernelContext& ctx);

}  // namespace ort_train
