#!/usr/bin/env python3
"""Memory per rank of data-parallel training at 1, 2 and 4 ranks under
--zero 0, 1 and 2: gradient bytes and optimizer-state bytes (what ort_train
logs for every rank) and each rank's peak RSS, with the first losses, which
must agree across the stages.

    python3 bench/bench_zero.py --ort-train build/ort_train [--params 50e6] [--width 1024] [--ranks 1,2,4]

The model is bench_checkpoint.py's: square MatMul + Relu layers (weights in
external data), an MSE loss, AdamW, batch 4 per rank, 3 steps, synthetic
data, one thread per rank (4 ranks oversubscribe a 2-core machine: memory,
not speed, is measured here). Needs mpirun and numpy + onnx.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_checkpoint import make_model  # noqa: E402

MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]


def ranks_list(text, what):
    """The per-rank figures of the log line that starts with `what` (rank 0 logs every rank's)."""
    line = next((l for l in text.splitlines() if f"] {what}" in l), None)
    if line is None:
        return None
    m = re.search(r"ranks 0-\d+: ([\d., ]+) (bytes|MiB)", line)
    if m:
        return [float(v) for v in m.group(1).split(", ")]
    m = re.search(r"\(([\d]+) bytes\)" if what.startswith("gradients") else r"peak RSS ([\d.]+) MiB", line)
    return [float(m.group(1))] if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--params", type=float, default=50e6)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--work", default="/tmp/ort_train_bench_zero")
    args = ap.parse_args()
    model_dir = os.path.join(args.work, f"model_{args.params:.0f}_{args.width}")
    if not os.path.exists(os.path.join(model_dir, "training.yaml")):
        make_model(model_dir, args.params, args.width)
    n = max(1, round(args.params / (args.width * args.width))) * args.width * args.width
    print(f"{n / 1e6:.1f}M parameters ({4 * n / 2**20:,.0f} MiB of float32 gradients), AdamW, batch 4 per rank\n")
    print("| ranks | --zero | gradients MiB per rank | optimizer state MiB per rank | peak RSS MiB per rank | "
          "first losses |")
    print("|---|---|---|---|---|---|")
    for ranks in [int(r) for r in args.ranks.split(",")]:
        first = None  # --zero 0's at this world size
        for zero in (0, 1, 2):
            if ranks == 1 and zero > 0:
                continue  # one process has nothing to shard
            out = os.path.join(args.work, f"run_{ranks}_{zero}")
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            cmd = ([] if ranks == 1 else MPIRUN + ["-np", str(ranks)]) + [
                args.ort_train, "--log-level", "info", "train", "--model", os.path.join(model_dir, "model.onnx"),
                "--config", os.path.join(model_dir, "training.yaml"), "--data", "synthetic", "--batch-size", "4",
                "--steps", "3", "--threads", "1", "--zero", str(zero), "--metrics", os.path.join(out, "m.jsonl")]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stderr[-2000:]}")
            text = r.stdout + r.stderr
            grads = ranks_list(text, "gradients:")
            rss = ranks_list(text, "peak memory:")
            state = re.search(r"optimizer state: ([\d.]+) MiB", text)
            with open(os.path.join(out, "m.jsonl")) as f:
                losses = [json.loads(l)["loss"] for l in f if '"loss"' in l][:2]
            if first is None:
                first = losses
            agree = "" if all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip(losses, first)) else " DIFFER"
            print(f"| {ranks} | {zero} | {', '.join(f'{g / 2**20:,.1f}' for g in grads)} | "
                  f"{float(state.group(1)):,.1f} (rank 0) | {', '.join(f'{v:,.0f}' for v in rss)} | "
                  f"{', '.join(f'{l:.6f}' for l in losses)}{agree} |", flush=True)


if __name__ == "__main__":
    main()
