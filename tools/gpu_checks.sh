#!/usr/bin/env bash
# Runs on the lent GPU machine (the device tool's `run`, with `carry:
# ["gpu_bundle"]` after tools/gpu_bundle.sh here): the whole Catch2 suite on
# the GPU build, the CUDA tests verbosely (CPU-vs-CUDA for every gradient
# case, 10-step parity per model and optimizer, deterministic repeats), the
# measured attention choice (cublas vs tiled) on four shapes, and the
# BERT-base / GPT-2 small benchmark against PyTorch eager and torch.compile on
# the same card, in fp32 (TF32) and in bf16 (autocast), with MFU.
# Everything it prints is also written under $OUT (or ./gpu_out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu_out}
mkdir -p "$out" /tmp/ot
tar xzf gpu_bundle/ort_train_gpu.tar.gz -C /tmp/ot
source /tmp/ot/env.sh
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  echo "== CUDA tests"
  ort_train_tests "cuda.*" -s 2>&1 | grep -E "CUDA vs CPU|not run|FAILED|passed|failed|with expansion" -A3
  echo "== whole suite"
  ort_train_tests 2>&1 | tail -3
} 2>&1 | tee "$out/tests.txt"
# The step-time tables first: what a call cut short at its limit still brings back is the most wanted.
for precision in fp32 bf16; do
  python3 bench/bench_gpu.py --ort-train /tmp/ot/bin/ort_train --steps "${STEPS:-20}" --precision $precision 2>&1 |
    tee "$out/bench_$precision.txt"
done
python3 bench/bench_attention_choice.py --ort-train /tmp/ot/bin/ort_train --device cuda --rounds 2 --repeat 5 2>&1 |
  tee "$out/attention_choice.txt"
