// runtime/cpu/openmp_wait.h: the getenv every library of this process binds
// to (libgomp's constructor among them) is the executable's, which adds
// GOMP_SPINCOUNT's default unless the environment chose a wait policy.
#include "runtime/cpu/openmp_wait.h"

#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>

namespace ort_train::testing {
namespace {

// Sets or unsets an environment variable for a scope, then restores it.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const char* n, const char* value) : name(n) {
    if (const char* v = environment_value(n)) old = v;
    if (value) setenv(n, value, 1);
    else unsetenv(n);
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

}  // namespace

TEST_CASE("openmp_wait: the process's getenv is the executable's") {
  // What a library's call to getenv binds to: the first definition in the global scope.
  void* bound = dlsym(RTLD_DEFAULT, "getenv");
  void* c_library = dlsym(RTLD_NEXT, "getenv");
  REQUIRE(bound != nullptr);
  CHECK(bound != c_library);
  CHECK(bound == reinterpret_cast<void*>(&::getenv));
}

TEST_CASE("openmp_wait: GOMP_SPINCOUNT has a default only when no wait policy is set") {
  ScopedEnv spins("GOMP_SPINCOUNT", nullptr), policy("OMP_WAIT_POLICY", nullptr);
  REQUIRE(std::getenv("GOMP_SPINCOUNT") != nullptr);
  CHECK(std::string(std::getenv("GOMP_SPINCOUNT")) == kOpenMpSpinCount);
  CHECK(environment_value("GOMP_SPINCOUNT") == nullptr);
  CHECK(openmp_wait_description() ==
        std::string("spin ") + kOpenMpSpinCount + " times, then sleep (GOMP_SPINCOUNT, ort_train's default)");
  {
    ScopedEnv passive("OMP_WAIT_POLICY", "passive");  // the user's policy: no default spin count
    CHECK(std::getenv("GOMP_SPINCOUNT") == nullptr);
    CHECK(std::string(std::getenv("OMP_WAIT_POLICY")) == "passive");
    CHECK(openmp_wait_description() == "OMP_WAIT_POLICY=passive (from the environment)");
  }
  {
    ScopedEnv theirs("GOMP_SPINCOUNT", "42");
    CHECK(std::string(std::getenv("GOMP_SPINCOUNT")) == "42");
  }
  // Every other name reads as the C library reads it.
  ScopedEnv other("ORT_TRAIN_TEST_VARIABLE", "x=y");
  CHECK(std::string(std::getenv("ORT_TRAIN_TEST_VARIABLE")) == "x=y");
  CHECK(std::getenv("ORT_TRAIN_TEST_VARIABLE_NOT_SET") == nullptr);
  CHECK(std::getenv("ORT_TRAIN_TEST_VARIABL") == nullptr);  // a prefix of a set name is not it
}

}  // namespace ort_train::testing
