// How much memory this process may use on the host: the machine's physical
// memory, lowered by the process's RLIMIT_AS and by its cgroup's memory limit
// (v2 memory.max, v1 memory.limit_in_bytes), which is what a container, a
// Slurm job or `ulimit -v` hands it. The CPU device's memory budget.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "graph/status.h"

namespace ort_train {

uint64_t host_memory_bytes();

// The error for host memory that ran out (std::bad_alloc): the executor's,
// which names the node, and the app's, outside any kernel.
Status out_of_host_memory();

// The smallest of the known limits (0 = none known). `cgroup_text` is a
// memory.max or memory.limit_in_bytes file's contents ("max", or bytes).
uint64_t smallest_memory_limit(uint64_t physical, uint64_t rlimit_as, const std::optional<std::string>& cgroup_text);

}  // namespace ort_train
