#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "runtime/cpu/openmp_wait.h"

// The suite's threads wait as ort_train's do (runtime/cpu/openmp_wait.h):
// CTest runs tests side by side, and spinning threads starved each other.
ORT_TRAIN_DEFAULT_OPENMP_WAIT
