#!/usr/bin/env bash
# The main job on a fresh machine: install, build the ort_train program (not
# the test suite; the CUDA plugin only where an NVIDIA driver is loaded, or
# with --cuda), then train the bundled character-level GPT (examples/char_lm)
# on the license texts Debian ships in /usr/share/common-licenses, on the GPU
# when one is usable (else the CPU), and report the held-out perplexity. The
# trained model is written to build/char_lm/. Times: README.
#
# Usage: tools/main.sh [--cuda] [--configure-only]
#   --configure-only: stop after configuring (CTest tools.main_job_builds_what_it_runs
#   checks the targets); ORT_TRAIN_BUILD_DIR picks another build folder than build/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ORT_TRAIN_BUILD_DIR:-build}
cuda=OFF
configure_only=0
for arg in "$@"; do
  case $arg in
    --cuda) cuda=ON ;;
    --configure-only) configure_only=1 ;;
    *) echo "tools/main.sh: unknown argument $arg (--cuda, --configure-only)" >&2; exit 64 ;;
  esac
done
if [[ -e /proc/driver/nvidia/version ]]; then cuda=ON; fi
# A build folder that tools/test.sh (tools/build.sh) configured with the CUDA
# plugin keeps it: switching it off and on again would rebuild for nothing.
if [[ -f "$build/CMakeCache.txt" ]] && grep -q '^ORT_TRAIN_CUDA:BOOL=ON' "$build/CMakeCache.txt"; then cuda=ON; fi
bash tools/install_deps.sh
echo "configuring (CUDA plugin: $cuda; the test suite is not built: tools/test.sh builds it)"
log=$(mktemp)
if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DORT_TRAIN_TESTS=OFF -DORT_TRAIN_CUDA=$cuda >"$log" 2>&1; then
  cat "$log"; rm -f "$log"; exit 1
fi
rm -f "$log"
if ((configure_only)); then exit 0; fi
# Every default target: the program, its plugins, the man page and the bash
# completion, so that `cmake --install` works right after this.
cmake --build "$build" -j"$(nproc)"
"$build/ort_train" --version
python3 tools/make_text_dataset.py --out build/char_lm
"$build/ort_train" --config examples/char_lm/char_lm.yaml \
  --data build/char_lm/train.npz --eval-data build/char_lm/eval.npz \
  --metrics build/char_lm/metrics.jsonl --checkpoint-dir build/char_lm/checkpoints --save-every 500 \
  --export build/char_lm/trained.onnx
echo "trained model: build/char_lm/trained.onnx; per-step metrics: build/char_lm/metrics.jsonl"
