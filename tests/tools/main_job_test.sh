#!/usr/bin/env bash
# tools/main.sh builds what it runs (CTest tools.main_job_builds_what_it_runs):
# configured as the main job configures, the build has the ort_train program
# and its MPI plugin but not the test suite, and no CUDA plugin where no
# NVIDIA driver is loaded.
set -euo pipefail
source_dir=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ORT_TRAIN_BUILD_DIR="$work/build" bash "$source_dir/tools/main.sh" --configure-only > "$work/log" 2>&1 ||
  { cat "$work/log"; exit 1; }
targets=$(cmake --build "$work/build" --target help)
fail=0
grep -qw "ort_train" <<<"$targets" || { echo "FAIL: no ort_train target"; fail=1; }
if grep -qw "ort_train_tests" <<<"$targets"; then echo "FAIL: the main job would build the test suite"; fail=1; fi
if [[ ! -e /proc/driver/nvidia/version ]] && grep -qw "ort_train_cuda" <<<"$targets"; then
  echo "FAIL: the main job would build the CUDA plugin on a machine with no NVIDIA driver"; fail=1
fi
# What cmake --install copies is built by the main job's build (its default
# target), not only by the test suite's: the completion, and the man page
# where help2man is installed.
all=$(grep -E '^all: ' "$work/build/CMakeFiles/Makefile2" || true)
grep -q 'ort_train_completion.dir/all' <<<"$all" || { echo "FAIL: the default build does not make the bash completion"; fail=1; }
if command -v help2man > /dev/null && ! grep -q 'ort_train_man.dir/all' <<<"$all"; then
  echo "FAIL: the default build does not make the man page"; fail=1
fi
grep -qE '^cmake --build "\$build" -j' "$source_dir/tools/main.sh" ||
  { echo "FAIL: tools/main.sh does not build the default target, which cmake --install needs"; fail=1; }
((fail)) || echo "ok: the main job builds ort_train only ($(grep -cw 'ort_train\|ort_train_mpi\|ort_train_core' <<<"$targets") targets of its own)"
exit $fail
