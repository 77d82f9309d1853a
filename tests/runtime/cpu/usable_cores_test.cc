// usable_cores: a cgroup's CPU quota lowers --threads 0's count (v1 and v2
// layouts, the lowest of nested limits, "max" and -1 as no limit).
#include "runtime/cpu/usable_cores.h"

#include <sched.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "test_util.h"

namespace ort_train::testing {
namespace {

namespace fs = std::filesystem;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text << "\n";
}

}  // namespace

TEST_CASE("usable_cores: a cgroup v2 quota and its enclosing groups' limit the count") {
  Dir d("usable_cores_v2");
  fs::path root = d.p;
  CHECK_FALSE(cgroup_cpu_limit(root.string(), "0::/job/step\n").has_value());  // no files: no limit
  write(root / "job/step/cpu.max", "max 100000");
  CHECK_FALSE(cgroup_cpu_limit(root.string(), "0::/job/step\n").has_value());
  write(root / "job/cpu.max", "250000 100000");  // 2.5 cores: 3 threads
  CHECK(cgroup_cpu_limit(root.string(), "0::/job/step\n") == 3);
  write(root / "cpu.max", "100000 100000");  // the namespace root's: 1
  CHECK(cgroup_cpu_limit(root.string(), "0::/job/step\n") == 1);
  write(root / "cpu.max", "garbage");
  CHECK(cgroup_cpu_limit(root.string(), "0::/job/step\n") == 3);
}

TEST_CASE("usable_cores: a cgroup v1 cpu controller's quota limits the count") {
  Dir d("usable_cores_v1");
  fs::path root = d.p;
  std::string self = "4:memory:/x\n3:cpu,cpuacct:/docker/abc\n0::/\n";
  write(root / "cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1");
  write(root / "cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000");
  CHECK_FALSE(cgroup_cpu_limit(root.string(), self).has_value());
  write(root / "cpu,cpuacct/docker/cpu.cfs_quota_us", "400000");
  write(root / "cpu,cpuacct/docker/cpu.cfs_period_us", "100000");
  CHECK(cgroup_cpu_limit(root.string(), self) == 4);
  // The memory controller's folder is not read for CPU.
  write(root / "memory/x/cpu.cfs_quota_us", "100000");
  CHECK(cgroup_cpu_limit(root.string(), self) == 4);
}

TEST_CASE("usable_cores: at least one and at most the affinity mask's CPUs") {
  int n = usable_cores();
  CHECK(n >= 1);
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  CHECK(n <= CPU_COUNT(&set));
}

}  // namespace ort_train::testing
