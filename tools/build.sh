#!/usr/bin/env bash
# Installs what is missing, then configures and builds ort_train into build/.
# Warnings are errors when CI=true. Uses ccache when present (installed by install_deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install_deps.sh
werror=OFF
[[ "${CI:-}" == "true" ]] && werror=ON
jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DORT_TRAIN_WERROR=$werror >/dev/null
cmake --build build -j"$jobs"
