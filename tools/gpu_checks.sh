#!/usr/bin/env bash
# Runs on the lent GPU machine (the device tool's `run`, with `carry:
# ["gpu_bundle"]` after tools/gpu_bundle.sh here), most wanted first, each
# part under its own time limit so that a call cut short still brings back the
# parts before it:
#   1. the CUDA tests verbosely (CPU-vs-CUDA for every gradient case, 10-step
#      parity per model and optimizer, deterministic repeats, the 16-bit
#      kernels and both 16-bit attention candidates against the CPU's);
#   2. the BERT-base / GPT-2 small benchmark against PyTorch eager and
#      torch.compile on the same card, fp32 (TF32) then bf16 (autocast), with
#      MFU; in bf16 also ort_train with --enable-pass half_activations (its
#      measured attention choice, cublas against flash, printed);
#   3. the ONNX node tests (ours, and ../shared's corpus when the bundle holds
#      it) through `ort_train run --device cuda`: every forward kernel on the GPU;
#   4. the measured attention choice (cublas vs tiled) on four shapes;
#   5. compute-sanitizer memcheck over the CUDA gradient cases and the 16-bit
#      kernels (flash attention included);
#   6. racecheck (shared-memory hazards) over the same cases, when asked for.
# PARTS (default "tests bench nccl nodes attention sanitizer"; add "racecheck")
# picks parts, so a second call can finish what a first left; BENCH_ARGS adds
# bench_gpu.py flags (--no-compile). Everything it prints is also
# written under $OUT (or ./gpu_out).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu_out}
mkdir -p "$out" /tmp/ot
tar xJf gpu_bundle/ort_train_gpu.tar.xz -C /tmp/ot 2>/dev/null ||
  python3 -c "import tarfile; tarfile.open('gpu_bundle/ort_train_gpu.tar.xz').extractall('/tmp/ot')"
source /tmp/ot/env.sh
limit() { timeout --kill-after=5 "$@"; }
parts=" ${PARTS:-tests bench nccl nodes attention sanitizer} "
want() { [[ $parts == *" $1 "* ]]; }
want tests && {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  echo "== CUDA tests"
  limit "${TESTS_S:-180}" ort_train_tests "cuda.*" -s 2>&1 |
    grep -E "CUDA vs CPU|CUDA bf16|worst relative|^  step |not run|FAILED|element |passed|failed|with expansion" -A3
} 2>&1 | tee "$out/tests.txt"
want bench && for precision in fp32 bf16; do
  limit "${BENCH_S:-240}" python3 bench/bench_gpu.py --ort-train /tmp/ot/bin/ort_train --steps "${STEPS:-20}" \
    --precision $precision ${BENCH_ARGS:-} 2>&1 | tee "$out/bench_$precision.txt"
done
if want nodes && [ -f gpu_bundle/node_tests.tar.gz ]; then
  mkdir -p /tmp/node_tests && tar xzf gpu_bundle/node_tests.tar.gz -C /tmp/node_tests
  # Ours first (issue 30's ops, 128 cases), then the corpus (about 700): each case is one process with its own CUDA start.
  for cases in /tmp/node_tests/node_tests/ /tmp/node_tests/onnx_node_tests/; do
    [ -d "$cases" ] || continue
    echo "== node tests on cuda: $(basename "$cases")"
    PYTHONUNBUFFERED=1 limit "${NODE_S:-75}" python3 tests/conformance/run_node_tests.py --ort-train /tmp/ot/bin/ort_train \
      --cases "$cases" --device cuda --verbose --timeout 20 2>&1
  done | tee "$out/node_tests_cuda.txt"
fi
want attention && limit "${ATTENTION_S:-60}" python3 bench/bench_attention_choice.py --ort-train /tmp/ot/bin/ort_train --device cuda \
  --rounds 2 --repeat 5 2>&1 | tee "$out/attention_choice.txt"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if want sanitizer && [ -n "$sanitizer" ]; then
  limit "${SANITIZER_S:-120}" "$sanitizer" --tool memcheck --leak-check no --error-exitcode 9 --target-processes all \
    /tmp/ot/bin/ort_train_tests "cuda.every_gradient_case_matches_the_cpu,cuda.half_kernels_match_the_cpu" 2>&1 | tail -20 | tee "$out/memcheck.txt"
fi
if want racecheck && [ -n "$sanitizer" ]; then
  limit "${RACECHECK_S:-90}" "$sanitizer" --tool racecheck --racecheck-report hazard --error-exitcode 9 \
    /tmp/ot/bin/ort_train_tests "cuda.every_gradient_case_matches_the_cpu,cuda.half_kernels_match_the_cpu" 2>&1 | tail -20 | tee "$out/racecheck.txt"
fi
if want nccl; then
  echo "== NCCL, 1 rank: every collective on device tensors"
  limit "${NCCL_S:-30}" ort_train_communicator_check --device cuda; echo "exit $?"
fi 2>&1 | tee "$out/nccl.txt"
