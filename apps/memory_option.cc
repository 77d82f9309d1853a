// --max-memory SIZE: the memory budget (runtime/device.h set_memory_limit)
// that every planned graph and every tensor must fit, shared by train, run
// and inspect. Sizes are bytes, or a number with K, M, G or T (powers of
// 1024, as `free -h` and PyTorch's memory summaries count), optionally
// followed by "B" or "iB": 2G, 1.5GiB, 512M, 1073741824.
#include <charconv>
#include <cmath>

#include "apps/commands.h"
#include "apps/option_checks.h"
#include "runtime/device.h"

namespace ort_train::app {

Result<uint64_t> parse_byte_size(const std::string& text) {
  double number = 0;
  const char* end = text.data() + text.size();
  auto [rest, ec] = std::from_chars(text.data(), end, number);
  std::string unit(rest, end);
  for (const char* suffix : {"iB", "B"})
    if (unit.size() > 1 && unit.ends_with(suffix)) {
      unit.resize(unit.size() - std::char_traits<char>::length(suffix));
      break;
    }
  const std::string units = "KMGT";
  double scale = 1;
  if (unit.size() == 1 && units.find(static_cast<char>(std::toupper(unit[0]))) != std::string::npos)
    scale = std::pow(1024.0, static_cast<double>(units.find(static_cast<char>(std::toupper(unit[0]))) + 1));
  else if (!unit.empty())
    ec = std::errc::invalid_argument;
  double bytes = number * scale;
  if (ec != std::errc() || !(bytes >= 1) || bytes >= 18e18)
    return invalid_argument("--max-memory '{}': expected a size such as 2G, 512M or 1073741824 (bytes)", text);
  return static_cast<uint64_t>(bytes);
}

void add_max_memory_option(CLI::App* cmd, std::string& value) {
  cmd->add_option("--max-memory", value,
                  "memory budget (e.g. 2G, 512M): a plan or any tensor beyond it is refused before it runs "
                  "(default: the device's memory; on the host, at most RLIMIT_AS and the cgroup's limit)")
      ->check(byte_size());
}

Status apply_max_memory(const std::string& value) {
  if (value.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(uint64_t bytes, parse_byte_size(value));
  set_memory_limit(bytes);
  return Status::Ok();
}

}  // namespace ort_train::app
