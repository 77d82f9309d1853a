#include "runtime/cpu/openmp_wait.h"

#include <unistd.h>

#include <cstring>

namespace ort_train {

const char* environment_value(const char* name) {
  if (!name || !environ) return nullptr;
  size_t n = std::strlen(name);
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  return nullptr;
}

const char* getenv_with_openmp_spin_default(const char* name) {
  const char* value = environment_value(name);
  if (value || !name || std::strcmp(name, "GOMP_SPINCOUNT") != 0) return value;
  return environment_value("OMP_WAIT_POLICY") ? nullptr : kOpenMpSpinCount;
}

std::string openmp_wait_description() {
  const char* policy = environment_value("OMP_WAIT_POLICY");
  const char* spins = environment_value("GOMP_SPINCOUNT");
  if (!policy && !spins) {
    return std::string("spin ") + kOpenMpSpinCount + " times, then sleep (GOMP_SPINCOUNT, ort_train's default)";
  }
  std::string s;
  if (policy) s += std::string("OMP_WAIT_POLICY=") + policy;
  if (spins) s += (s.empty() ? "" : " ") + std::string("GOMP_SPINCOUNT=") + spins;
  return s + " (from the environment)";
}

}  // namespace ort_train
