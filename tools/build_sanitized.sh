#!/usr/bin/env bash
# Configures and builds build-sanitize/: clang, AddressSanitizer +
# UndefinedBehaviorSanitizer on every C++ target, libFuzzer's coverage
# instrumentation, the libFuzzer targets (tests/fuzz/) and the test suite.
# CUDA is off (nvcc code is not instrumented). tools/fuzz.sh and
# tools/test.sh use it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh --tests --fuzz
# -O1 with line tables only: a report's frames name file and
# line, and clang compiles it far faster than -O3 -g. ccache shares it between
# clones (CMakeLists.txt); the debug info's paths may point into another clone.
log=$(mktemp)
if ! CC=clang CXX=clang++ cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo \
     "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" -DORT_TRAIN_CUDA=OFF \
     -DORT_TRAIN_SANITIZE=address,undefined -DORT_TRAIN_FUZZ=ON -DORT_TRAIN_TESTS=ON >"$log" 2>&1; then
  cat "$log"; rm -f "$log"; exit 1
fi
rm -f "$log"
cmake --build build-sanitize -j"$(nproc)" "$@"
