#include "runtime/cpu/usable_cores.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace ort_train {
namespace {

std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

// Cores from a quota and a period in microseconds; none for "max" or -1.
std::optional<int> cores_of(const std::string& quota, const std::string& period) {
  try {
    if (quota.empty() || quota == "max" || quota[0] == '-') return std::nullopt;
    double q = std::stod(quota), p = std::stod(period.empty() ? "100000" : period);
    if (!(q > 0) || !(p > 0)) return std::nullopt;
    return std::max(1, static_cast<int>(std::ceil(q / p - 1e-9)));
  } catch (const std::exception&) {  // a file we cannot read as numbers limits nothing
    return std::nullopt;
  }
}

// "/a/b" -> {"/a/b", "/a", ""}: the group and every group enclosing it.
std::vector<std::string> enclosing_groups(std::string path) {
  std::vector<std::string> groups;
  while (!path.empty() && path.back() == '/') path.pop_back();
  for (;;) {
    groups.push_back(path);
    size_t slash = path.rfind('/');
    if (slash == std::string::npos || path.empty()) break;
    path.resize(slash);
  }
  if (groups.back() != "") groups.push_back("");
  return groups;
}

void lower(std::optional<int>& limit, std::optional<int> candidate) {
  if (candidate && (!limit || *candidate < *limit)) limit = candidate;
}

}  // namespace

std::optional<int> cgroup_cpu_limit(const std::string& root, const std::string& self_cgroup) {
  std::optional<int> limit;
  std::istringstream lines(self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    // hierarchy-ID:controllers:path; v2's unified hierarchy is "0::path".
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (controllers.empty()) {
      for (const std::string& g : enclosing_groups(path)) {
        std::istringstream max(read_small_file(root + g + "/cpu.max"));
        std::string quota, period;
        max >> quota >> period;
        lower(limit, cores_of(quota, period));
      }
    } else if (("," + controllers + ",").find(",cpu,") != std::string::npos) {
      for (const char* mount : {"/cpu,cpuacct", "/cpu", "/cpuacct,cpu"}) {
        for (const std::string& g : enclosing_groups(path)) {
          std::string dir = root + mount + g;
          lower(limit, cores_of(read_small_file(dir + "/cpu.cfs_quota_us"), read_small_file(dir + "/cpu.cfs_period_us")));
        }
      }
    }
  }
  return limit;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  std::ifstream self("/proc/self/cgroup");
  std::stringstream text;
  text << self.rdbuf();
  if (std::optional<int> quota = cgroup_cpu_limit("/sys/fs/cgroup", text.str())) cores = std::min(cores, *quota);
  return std::max(1, cores);
}

}  // namespace ort_train
