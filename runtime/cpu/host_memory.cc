#include "runtime/cpu/host_memory.h"

#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <fstream>

namespace ort_train {
namespace {

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string s;
  std::getline(in, s);
  return s;
}

// This process's cgroup memory limit file: v2's memory.max in its own group
// ("0::/path" in /proc/self/cgroup), else v1's memory controller line.
std::optional<std::string> cgroup_limit_text() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  std::optional<std::string> v2, v1;
  while (std::getline(in, line)) {
    size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty())
      v2 = read_small_file("/sys/fs/cgroup" + path + "/memory.max");
    else if (controllers == "memory")
      v1 = read_small_file("/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes");
  }
  // Inside a container the group's own folder is often the cgroup root.
  if (!v2) v2 = read_small_file("/sys/fs/cgroup/memory.max");
  if (!v1) v1 = read_small_file("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  return v2 ? v2 : v1;
}

}  // namespace

uint64_t smallest_memory_limit(uint64_t physical, uint64_t rlimit_as, const std::optional<std::string>& cgroup_text) {
  uint64_t limit = physical;
  auto lower = [&](uint64_t v) {
    if (v > 0 && (limit == 0 || v < limit)) limit = v;
  };
  lower(rlimit_as);
  if (cgroup_text) {
    uint64_t v = 0;
    const std::string& t = *cgroup_text;
    // "max" (v2) or a huge page-rounded INT64_MAX (v1) mean no limit; both
    // parse to nothing smaller than the physical memory.
    if (std::from_chars(t.data(), t.data() + t.size(), v).ec == std::errc()) lower(v);
  }
  return limit;
}

Status out_of_host_memory() {
  return make_error(ErrorCode::kIo, "out of host memory (the machine's, the process's RLIMIT_AS or its cgroup's limit)");
}

uint64_t host_memory_bytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  uint64_t physical = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  struct rlimit rl {};
  uint64_t as = ::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur : 0;
  return smallest_memory_limit(physical, as, cgroup_limit_text());
}

}  // namespace ort_train
