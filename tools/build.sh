#!/usr/bin/env bash
# Installs what is missing, then configures and builds ort_train into build/.
# Warnings are errors when CI=true. Uses ccache when present (installed by install_deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh --tests
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
jobs=$(nproc)
# Everything, tests and CUDA included (tools/main.sh may have configured build/ without them).
log=$(mktemp)
if ! cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DORT_TRAIN_WERROR=$werror -DORT_TRAIN_TESTS=ON \
     -DORT_TRAIN_CUDA=ON >"$log" 2>&1; then
  cat "$log"; rm -f "$log"; exit 1
fi
grep -E '^-- (ort_train|NCCL|MPI not)' "$log" || true  # what was found: CUDA, NCCL, MPI
rm -f "$log"
cmake --build build -j"$jobs"
