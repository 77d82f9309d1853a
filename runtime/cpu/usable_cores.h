// How many cores this process may run on: the CPUs its affinity mask allows,
// fewer when its cgroup has a CPU quota (a container given 2 of a node's 64
// cores, a Slurm job step). `--threads 0` starts this many threads; all of a
// node's cores would put several threads on each allowed core.
#pragma once
#include <optional>
#include <string>

namespace ort_train {

int usable_cores();

// The CPU quota of the cgroup the process is in, in cores (quota / period,
// rounded up), under `root` (/sys/fs/cgroup): the lowest of its own group's
// and every enclosing group's limit. None when nothing limits it. Reads
// cgroup v2's cpu.max and v1's cpu.cfs_quota_us / cpu.cfs_period_us;
// `self_cgroup` is /proc/self/cgroup's text.
std::optional<int> cgroup_cpu_limit(const std::string& root, const std::string& self_cgroup);

}  // namespace ort_train
