#!/usr/bin/env bash
# Install, build and run every test (CTest: Catch2 unit tests, the ONNX
# conformance run and the PyTorch model-parity run). .ci/run calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
cd build
# The conformance test passes above its pass-rate threshold with some cases
# failing inside it; CTest hides a passing test's output, so it runs first on
# its own and its failing case names and totals are printed here.
conformance='^conformance\.onnx_node_tests$'
ctest -R "$conformance" -V > conformance.log 2>&1 || { cat conformance.log; exit 1; }
grep -E '^[0-9]+: (FAIL |SKIPPED|conformance:)' conformance.log | sed -E 's/^[0-9]+: /  /' || true
grep -E '(tests passed|Skipped|Passed|Failed)' conformance.log | tail -2
# Everything else; tests that cannot run here (no GPU, no ../shared) are
# reported as skipped, by name, in the summary.
ctest -E "$conformance" --output-on-failure -j"$(nproc)"
cd ..
# A new user's first steps: the main job, then cmake --install (issue 51).
bash tests/tools/first_day.sh

# The sanitizer build (clang, AddressSanitizer + UndefinedBehaviorSanitizer,
# docs/security.md): the suite again, the fuzz targets' kept regressions
# among it, then every fuzz target for a short time.
bash tools/build_sanitized.sh
# Leaks are not checked here: Open MPI's mpirun tests leak by design; the
# fuzz targets below check leaks on everything a file reaches. Run once, in
# the build above, and not here: the Slurm tests (minutes of waiting on a
# scheduler, the same code as the mpirun tests), and the model-level runs
# that repeat the unit-tested code on bigger files (every fusion pass on the
# Hugging Face exports, recomputation on them, the examples): ten minutes
# under the sanitizers that pushed CI past its limit, for no code of their own.
once='^(cluster\.|examples\.|recompute\.on_exports$|passes\..*_on_hf_exports$)'
(cd build-sanitize && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j"$(nproc)" -E "$once")
bash tools/fuzz.sh "${ORT_TRAIN_CI_FUZZ_SECONDS:-30}"
