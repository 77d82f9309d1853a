// How long OpenMP's idle threads spin before they sleep. libgomp's default is
// 300,000 spins, milliseconds of a core per wait: on a machine where another
// job holds a core, the kernels' threads spun against it at every barrier and
// 40 BERT steps took 45x their quiet time (issue 51). ort_train bounds the
// spin (docs/benchmarks.md measures the bound, quiet and beside a busy core).
//
// libgomp reads GOMP_SPINCOUNT once, with getenv, in its constructor: before
// main, and before the C library has even set up `environ` for a setenv from
// an executable's .preinit_array to survive. So each executable answers that
// getenv itself: ORT_TRAIN_DEFAULT_OPENMP_WAIT defines the process's getenv
// (the executable's definition is the one every library binds to), which
// reads the environment as the C library's does and adds one default:
// GOMP_SPINCOUNT is kOpenMpSpinCount when the environment sets neither it nor
// OMP_WAIT_POLICY. A user's setting wins; child processes inherit nothing.
#pragma once
#include <string>

namespace ort_train {

inline constexpr const char* kOpenMpSpinCount = "1000";

// The environment's own value of `name` (what getenv returns without the default).
const char* environment_value(const char* name);

// getenv with the default above.
const char* getenv_with_openmp_spin_default(const char* name);

// One line for --version: what idle threads do, and whose choice it is.
std::string openmp_wait_description();

}  // namespace ort_train

// In one file of an executable, at namespace scope (apps/main.cc, tests/test_main.cc).
#define ORT_TRAIN_DEFAULT_OPENMP_WAIT                                 \
  extern "C" char* getenv(const char* name) noexcept {                \
    return const_cast<char*>(ort_train::getenv_with_openmp_spin_default(name)); \
  }
