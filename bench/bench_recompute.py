#!/usr/bin/env python3
"""--recompute cheap and --recompute layers against keeping every activation, on a real export:
planned and measured peak activation memory and the training step's time,
the two configurations interleaved round by round in separate processes.

Export the model first (hundreds of MB; never committed):

    .venv-hf/bin/python tools/export_hf_models.py --size base --opsets 14 --out /tmp/hfbase
    python3 bench/bench_recompute.py --ort-train build/ort_train --model-dir /tmp/hfbase/bert_opset14 [--auto-max-memory 832M]

Each run is `ort_train train --steps S` (AdamW, 2 threads, the CPU) on the
export's own batches; the first step (which plans and warms the allocator)
is left out of the times. The losses of every step must be equal bit for bit
between the configurations or the script stops. Prints a Markdown table:
medians over all timed steps of all rounds, with the range.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

CONFIGS = {"keep activations": [], "--recompute cheap": ["--recompute", "cheap"],
           "--recompute layers": ["--recompute", "layers"]}


def run(ort_train, d, extra, steps, threads, metrics):
    cmd = [ort_train, "train", "--model", os.path.join(d, "model.onnx"), "--config", os.path.join(d, "training.yaml"),
           "--data", os.path.join(d, "train_batches"), "--optimizer", "AdamW", "--lr", "1e-4", "--steps", str(steps),
           "--device", "cpu", "--threads", str(threads), "--metrics", metrics] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    text = out.stdout + out.stderr
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{text}")
    with open(metrics) as f:
        rows = [json.loads(line) for line in f if '"loss"' in line]
    planned = re.search(r"planned peak: weights [\d.]+ MiB \+ activations ([\d.]+) MiB", text)
    measured = re.search(r"peak memory: ([\d.]+) MiB", text)
    return {"losses": [r["loss"] for r in rows], "ms": [r["step_ms"] for r in rows[1:]],
            "planned": float(planned[1]), "measured": float(measured[1])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--model-dir", required=True, help="an export folder: model.onnx, training.yaml, train_batches/")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--auto-max-memory", help="also run --recompute auto under this budget (e.g. 832M)")
    args = ap.parse_args()
    configs = dict(CONFIGS)
    if args.auto_max_memory:
        configs[f"--recompute auto --max-memory {args.auto_max_memory}"] = ["--recompute", "auto", "--max-memory",
                                                                           args.auto_max_memory]
    results = {c: [] for c in configs}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for c, extra in configs.items():
                res = run(args.ort_train, args.model_dir, extra, args.steps, args.threads, os.path.join(tmp, "m.jsonl"))
                results[c].append(res)
                print(f"round {r + 1} {c}: {statistics.median(res['ms']):.0f} ms/step", file=sys.stderr)
    first = results["keep activations"][0]["losses"]
    for c in configs:
        for res in results[c]:
            if res["losses"] != first:
                sys.exit(f"{c}: losses differ from keeping the activations: {res['losses']} vs {first}")
    base = statistics.median(sum((x["ms"] for x in results["keep activations"]), []))
    print(f"{os.path.basename(os.path.normpath(args.model_dir))}, {args.threads} threads, "
          f"{args.rounds} rounds x {args.steps - 1} timed steps; losses of all {len(first)} steps bit-identical")
    print()
    print("| configuration | planned peak activations MiB | measured peak intermediate MiB | step ms, median (range) "
          "| step time vs keeping |")
    print("|---|---|---|---|---|")
    for c in configs:
        rs = results[c]
        ms = sum((x["ms"] for x in rs), [])
        print(f"| {c} | {rs[0]['planned']:.1f} | {rs[0]['measured']:.1f} | {statistics.median(ms):.0f} "
              f"({min(ms):.0f}–{max(ms):.0f}) | {statistics.median(ms) / base:.2f} |")


if __name__ == "__main__":
    main()
