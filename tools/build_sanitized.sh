#!/usr/bin/env bash
# Configures and builds build-sanitize/: clang, AddressSanitizer +
# UndefinedBehaviorSanitizer on every C++ target, libFuzzer's coverage
# instrumentation, the libFuzzer targets (tests/fuzz/) and the test suite.
# CUDA is off (nvcc code is not instrumented). tools/fuzz.sh and
# tools/test.sh use it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh --tests --fuzz
# This build has debug info (-g), for which ccache hashes the build folder by
# default: a fresh clone (CI) would then compile everything again. The debug
# info's paths may point into another clone; the code is the same.
export CCACHE_NOHASHDIR=true
log=$(mktemp)
if ! CC=clang CXX=clang++ cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORT_TRAIN_CUDA=OFF \
     -DORT_TRAIN_SANITIZE=address,undefined -DORT_TRAIN_FUZZ=ON -DORT_TRAIN_TESTS=ON >"$log" 2>&1; then
  cat "$log"; rm -f "$log"; exit 1
fi
rm -f "$log"
cmake --build build-sanitize -j"$(nproc)" "$@"
