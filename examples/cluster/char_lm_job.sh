#!/usr/bin/env bash
# The body of both batch scripts (ort_train.sbatch on GPU nodes,
# ort_train_cpu.sbatch on CPU nodes): srun starts the ranks on the bundled
# character-level GPT, and a run that a signal stopped is requeued.
#
# Slurm signals the job's tasks before its time limit (#SBATCH
# --signal=USR1@90), on preemption and on `scancel --signal=USR1`. ort_train
# then finishes its step, writes a checkpoint and exits 75 on every rank;
# this script requeues the job (`scontrol requeue`, which --requeue allows),
# and the next start continues from that checkpoint through --resume (which
# starts from step 0 when there is none yet, so one line serves the first
# run and every requeue). Arguments are passed to ort_train (--steps 200).
#
# ORT_TRAIN: the program (default: ort_train on PATH, else build/ort_train);
# ORT_TRAIN_OUT: the run folder (default build/char_lm_slurm).
set -euo pipefail
# Slurm runs a copy of the batch script from its spool folder: the repository is where sbatch was called.
root=${SLURM_SUBMIT_DIR:-$PWD}
prog=${ORT_TRAIN:-$(command -v ort_train || echo "$root/build/ort_train")}
out=${ORT_TRAIN_OUT:-$root/build/char_lm_slurm}
mkdir -p "$out"
[[ -f "$out/train.npz" ]] || python3 "$root/tools/make_text_dataset.py" --out "$out"
echo "job ${SLURM_JOB_ID:-?}, start ${SLURM_RESTART_COUNT:-0}: $prog"
# The global batch is nodes x tasks x --batch-size x --grad-accum. A bare
# "$prog" here would be the batch script's own single process: srun starts the ranks.
rc=0
srun --mpi=pmix "$prog" --config "$root/examples/char_lm/char_lm.yaml" \
  --data "$out/train.npz" --eval-data "$out/eval.npz" --batch-size 16 --grad-accum 1 \
  --threads "${SLURM_CPUS_PER_TASK:-1}" --metrics "$out/metrics.jsonl" \
  --checkpoint-dir "$out/checkpoints" --save-every 100 --resume --export "$out/trained.onnx" "$@" || rc=$?
if [[ $rc -eq 75 && -n ${SLURM_JOB_ID:-} ]]; then
  echo "stopped by a signal after a checkpoint: requeueing job $SLURM_JOB_ID"
  scontrol requeue "$SLURM_JOB_ID"
  exit 0
fi
exit "$rc"
