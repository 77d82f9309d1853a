#!/usr/bin/env python3
"""Data-parallel training on one machine: 1 rank x T threads against R ranks x
T/R threads under mpirun, on the same exported model, the same global batch
(the single process accumulates R micro-batches), Adam.

  /usr/bin/python3 bench/bench_distributed.py [--ort-train build/ort_train] [--ranks 2] [--threads 2] [--steps 8]

Prints, per configuration, the median step time, the time each step waited
for the gradient allreduce after the backward (`allreduce_ms` in --metrics),
and the overlap: the share of the no-overlap wait (--bucket-mb 0) that the
bucketed allreduce hid behind the backward. Model: bench_train.py's
BERT-style encoder (4 layers, hidden 256, seq 128, batch 8, vocab 30522).
Needs PyTorch (export) and mpirun.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import bench_train  # noqa: E402  (the model export)

WARMUP = 2


def run(args, folder, ranks, threads, accum, extra=()):
    metrics = os.path.join(folder, "m.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = ([] if ranks == 1 else ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                                  "-np", str(ranks)]) + [
        args.ort_train, "--log-level", "warn", "train", "--model", os.path.join(folder, "model.onnx"), "--config",
        os.path.join(folder, "desc.yaml"), "--data", os.path.join(folder, "data"), "--optimizer", "adam",
        "--lr", "1e-3", "--steps", str(args.steps + WARMUP), "--threads", str(threads), "--grad-accum", str(accum),
        "--metrics", metrics] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    rows = [json.loads(line) for line in open(metrics)][WARMUP:]
    return (statistics.median(r["step_ms"] for r in rows),
            statistics.median(r.get("allreduce_ms", 0.0) for r in rows), rows[0]["loss"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ort-train", default="build/ort_train")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    args = ap.parse_args()
    per_rank = max(1, args.threads // args.ranks)
    with tempfile.TemporaryDirectory() as folder:
        bench_train.export("bert", folder)
        one = run(args, folder, 1, args.threads, args.ranks)
        overlapped = run(args, folder, args.ranks, per_rank, 1)
        blocking = run(args, folder, args.ranks, per_rank, 1, ["--bucket-mb", "0"])
    print(f"BERT-style encoder (4 layers, hidden 256, seq 128, batch 8 per micro-batch), Adam, "
          f"global batch {8 * args.ranks}, median of {args.steps} steps after {WARMUP}")
    print(f"{'configuration':44}{'ms/step':>10}{'allreduce wait ms':>19}{'first loss':>14}")
    print(f"{f'1 rank x {args.threads} threads, --grad-accum {args.ranks}':44}{one[0]:10.1f}{'-':>19}{one[2]:14.6f}")
    print(f"{f'{args.ranks} ranks x {per_rank} thread(s), buckets 25 MB':44}{overlapped[0]:10.1f}{overlapped[1]:19.1f}"
          f"{overlapped[2]:14.6f}")
    print(f"{f'{args.ranks} ranks x {per_rank} thread(s), no overlap':44}{blocking[0]:10.1f}{blocking[1]:19.1f}"
          f"{blocking[2]:14.6f}")
    hidden = 1 - overlapped[1] / blocking[1] if blocking[1] > 0 else 0.0
    print(f"overlap: the buckets hid {100 * hidden:.0f}% of the allreduce wait; "
          f"{args.ranks} ranks / 1 rank step time {overlapped[0] / one[0]:.2f}")


if __name__ == "__main__":
    main()
