#!/usr/bin/env bash
# Install, build and run every test (CTest: Catch2 unit tests, the ONNX
# conformance run and the PyTorch model-parity run). .ci/run calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
cd build
ctest --output-on-failure -j"$(nproc)"
