#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz/) for SECONDS each (default 60),
# two at a time, over seed corpora made from the project's own files and, when
# present, ../shared/conformance. Builds build-sanitize/ first (clang,
# ASan + UBSan). A crash, leak, timeout or UB report fails the script and
# leaves the input in build-sanitize/fuzz/<target>/; keep it as a regression
# in tests/fuzz/regressions/<target>/ once fixed.
#   tools/fuzz.sh [SECONDS] [TARGET...]     e.g. tools/fuzz.sh 600 npz checkpoint
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(model_to_plan model_execution tensor_file npz description checkpoint token_file safetensors)
fuzz_targets=()
for t in "${targets[@]}"; do fuzz_targets+=("fuzz_$t"); done
bash tools/build_sanitized.sh --target "${fuzz_targets[@]}" ort_train >/dev/null
root=build-sanitize/fuzz
shared=../shared/conformance

# Seed corpora (rebuilt each run; the fuzzer's finds accumulate in corpus/).
seed() {  # seed TARGET FILE...
  mkdir -p "$root/$1/seeds" "$root/$1/corpus"
  for f in "${@:2}"; do
    [[ -f $f ]] && cp "$f" "$root/$1/seeds/$(echo "$f" | md5sum | cut -c1-16)" 2>/dev/null || true
  done
}
seed model_to_plan tests/models/*/model.onnx tests/models/hf/*/model.onnx examples/*/*.onnx \
  $(find "$shared" -name model.onnx -size -64k 2>/dev/null | head -400)
seed model_execution "$root"/model_to_plan/seeds/* tests/fuzz/regressions/model_execution/*
seed tensor_file $(find tests/models -name '*.pb' -size -64k | head -200) \
  $(find "$shared" -name '*.pb' -size -16k 2>/dev/null | head -400)
seed npz tests/training/data/*.npz $(find examples tests -name '*.npz' -size -256k | head -20)
seed description configs/*.yaml examples/*/*.yaml tests/models/*/training.yaml tests/fuzz/regressions/description/*
seed checkpoint tests/fuzz/regressions/checkpoint/*
seed token_file tests/fuzz/regressions/token_file/*
seed safetensors tests/fuzz/regressions/safetensors/*
# A checkpoint of each optimizer's state layout, from the real program.
for opt in sgd adam lamb; do
  ck=$root/checkpoint/make_$opt
  rm -rf "$ck"
  build-sanitize/ort_train --log-level error --model tests/models/mlp/model.onnx --config tests/models/mlp/training.yaml \
    --optimizer "$opt" --steps 1 --batch-size 1 --checkpoint-dir "$ck" --device cpu >/dev/null 2>&1 || true
  seed checkpoint "$ck"/*.ortc
done

# Training graphs (forward, loss and backward: the com.ort_train gradient ops)
# of the small test models, so model_execution's mutations reach the gradient
# kernels' operand checks.
for m in mlp cnn_bn lenet gru_lm lstm_lm bilstm_tagger transformer_lm bert gpt; do
  build-sanitize/ort_train --log-level error --model tests/models/$m/model.onnx --config tests/models/$m/training.yaml \
    --steps 1 --batch-size 2 --data synthetic --device cpu \
    --save-training-graph "$root/model_execution/seeds/training_$m.onnx" >/dev/null 2>&1 || true
done

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
status=0
run_one() {
  local t=$1 dir=$root/$1
  # -rss_limit_mb: a hostile input may ask for memory; the code under test must refuse, not take it.
  build-sanitize/tests/fuzz/fuzz_$t "$dir/corpus" "$dir/seeds" tests/fuzz/regressions/$t -max_total_time="$seconds" \
    -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=20 -max_len=262144 -print_final_stats=1 \
    -artifact_prefix="$dir/" >"$dir/log" 2>&1
}
pids=()
names=()
for t in "${targets[@]}"; do
  run_one "$t" & pids+=($!); names+=("$t")
  if ((${#pids[@]} == 2)); then
    for i in 0 1; do wait "${pids[$i]}" || { echo "fuzz_${names[$i]}: FINDING (see $root/${names[$i]}/log)"; status=1; }; done
    pids=(); names=()
  fi
done
for i in "${!pids[@]}"; do wait "${pids[$i]}" || { echo "fuzz_${names[$i]}: FINDING (see $root/${names[$i]}/log)"; status=1; }; done

# One line per target: executions, coverage, corpus size.
printf '%-16s %12s %10s %8s %8s %s\n' target executions exec/s cov features corpus
for t in "${targets[@]}"; do
  log=$root/$t/log
  execs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
  rate=$(grep -oE 'stat::average_exec_per_sec: +[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
  last=$(grep -E '#[0-9]+.*(cov|DONE)' "$log" | tail -1)
  cov=$(echo "$last" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+' || echo '?')
  ft=$(echo "$last" | grep -oE 'ft: [0-9]+' | grep -oE '[0-9]+' || echo '?')
  corpus=$(ls "$root/$t/corpus" | wc -l)
  printf '%-16s %12s %10s %8s %8s %s\n' "fuzz_$t" "$execs" "$rate" "$cov" "$ft" "$corpus"
done
# A finding's report and input, last, where a CI log's tail shows them: CI's
# clone is gone after the run, so the input travels as gzip+base64 (decode
# with `base64 -d | gunzip > input`, replay with the target's binary).
for t in "${targets[@]}"; do
  for f in "$root/$t"/crash-* "$root/$t"/leak-* "$root/$t"/timeout-* "$root/$t"/oom-* "$root/$t"/slow-unit-*; do
    [[ -f $f ]] || continue
    echo "== fuzz_$t finding: $(basename "$f") ($(stat -c %s "$f") bytes)"
    grep -E -m 12 '(ERROR: |runtime error|SUMMARY|==[0-9]+==.*(deadly|timeout)| #[0-9]+ 0x.* in .*(ort_train|autodiff|graph|runtime|optimizers))' "$root/$t/log" | cut -c1-200 || true
    echo "input (gzip | base64):"
    gzip -9c "$f" | base64 -w 0 | head -c 60000
    echo
  done
done
exit $status
