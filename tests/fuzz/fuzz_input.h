// What every fuzz target shares: quiet logging (a hostile input's error
// messages are expected, and printing them would halve the executions per
// second) and the fuzzer's bytes as a string.
#pragma once
#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ort_train::fuzz {

inline std::string bytes_of(const uint8_t* data, size_t size) {
  static const bool quiet = (spdlog::set_level(spdlog::level::off), true);
  (void)quiet;
  return std::string(reinterpret_cast<const char*>(data), size);
}

}  // namespace ort_train::fuzz
