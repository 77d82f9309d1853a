#!/usr/bin/env bash
# Data-parallel training of the bundled character-level GPT (examples/char_lm)
# on one machine with mpirun: RANKS processes, each with THREADS threads, each
# reading every RANKS-th micro-batch of the same shuffled data. CTest runs it
# with 2 ranks for a few steps (tests/CMakeLists.txt: examples.cluster_mpirun_local).
#
#   bash examples/cluster/mpirun_local.sh [BUILD_DIR] [OUT_DIR] [STEPS] [RANKS] [THREADS]
#
# --batch-size is per rank and micro-batch: 2 ranks x 16 train like one
# process with --batch-size 16 --grad-accum 2 (the global batch is 32, as the
# single-process main job's).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build}"
out="${2:-$build/char_lm_mpi}"
steps="${3:-300}"
ranks="${4:-2}"
threads="${5:-1}"
mkdir -p "$out"
[[ -f "$out/train.npz" ]] || python3 "$root/tools/make_text_dataset.py" --out "$out"
# --allow-run-as-root: containers and CI run as root; --oversubscribe: more
# ranks than cores is fine for a demonstration (never for speed).
mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" \
  "$build/ort_train" --config "$root/examples/char_lm/char_lm.yaml" \
  --data "$out/train.npz" --eval-data "$out/eval.npz" --batch-size 16 --steps "$steps" --threads "$threads" \
  --metrics "$out/metrics.jsonl" --checkpoint-dir "$out/checkpoints" --save-every 100 --export "$out/trained.onnx"
echo "trained model: $out/trained.onnx; per-step metrics (rank 0): $out/metrics.jsonl"
