#!/usr/bin/env python3
"""One model trained by ort_train under each --gemm-library setting,
interleaved round by round (issue 54): the first step (whose cost
`measured` bounds: it times its candidates in situ, on the run's own calls),
steps 2-5 (where it is still measuring), the settled step (the last half of
the steps, median and range over every round), the whole run, peak RSS, and
the first losses, which must agree to float32 rounding.

`measured` runs twice: as a user's first run (measuring as it goes) and
following the choices that run recorded (--kernel-choices), which is what a
resumed or repeated run does.

    python3 bench/make_resnet18.py /tmp/r18
    python3 bench/bench_gemm_library.py --ort-train build/ort_train --model-dir /tmp/r18 [--steps 10] [--rounds 3]

Run it on an idle machine, once with OPENBLAS_CORETYPE as the user has it and
once with it set (`env OPENBLAS_CORETYPE=Haswell python3 ...`).
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from peak_rss import measured  # noqa: E402


def run(args, extra, tmp):
    metrics = os.path.join(tmp, "m.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    rss, _ = measured([args.ort_train, "train", "--model", os.path.join(args.model_dir, "model.onnx"), "--config",
                       os.path.join(args.model_dir, "training.yaml"), "--data", "synthetic", "--steps",
                       str(args.steps), "--optimizer", "AdamW", "--lr", "1e-3", "--threads", str(args.threads),
                       "--seed", "1", "--metrics", metrics] + extra)
    with open(metrics) as f:
        rows = [json.loads(line) for line in f if '"step_ms"' in line]
    return rss, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", default="build/ort_train")
    ap.add_argument("--model-dir", required=True, help="a folder with model.onnx and training.yaml")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        choices = os.path.join(tmp, "choices.json")
        settings = [("openblas", ["--gemm-library", "openblas"]), ("onednn", ["--gemm-library", "onednn"]),
                    ("measured, first run", ["--gemm-library", "measured", "--kernel-choices", choices]),
                    ("measured, choices followed", ["--kernel-choices", choices])]
        first, early, settled, total, rss, losses = ({name: [] for name, _ in settings} for _ in range(6))
        for _ in range(args.rounds):
            for name, extra in settings:
                if name.startswith("measured, first") and os.path.exists(choices):
                    os.remove(choices)
                peak, rows = run(args, extra, tmp)
                ms = [r["step_ms"] for r in rows]
                first[name].append(ms[0])
                early[name].extend(ms[1:5])
                settled[name].extend(ms[len(ms) // 2:])
                total[name].append(sum(ms))
                rss[name].append(peak)
                losses[name].append(rows[0]["loss"])
    print(f"{args.model_dir}: {args.steps} steps, {args.rounds} rounds interleaved, {args.threads} threads, "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', 'unset')}\n")
    med = statistics.median
    print("| --gemm-library | first step ms (median, range) | vs openblas | steps 2-5 ms (median) | "
          "settled step ms (last half: median, range) | vs openblas | all steps s (median) | peak RSS MiB | first loss |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, _ in settings:
        f, s = first[name], settled[name]
        print(f"| {name} | {med(f):.1f} ({min(f):.1f}-{max(f):.1f}) | {med(f) / med(first['openblas']):.2f}x | "
              f"{med(early[name]):.1f} | {med(s):.1f} ({min(s):.1f}-{max(s):.1f}) | "
              f"{med(settled['openblas']) / med(s):.2f}x faster | {med(total[name]) / 1000:.2f} | "
              f"{max(rss[name]):.0f} | {losses[name][0]:.7f} |")
    ref = losses["openblas"][0]
    worst = max(abs(l - ref) / abs(ref) for ls in losses.values() for l in ls)
    print(f"\nlargest relative difference of a first loss from openblas's: {worst:.1e}")
    return 0 if worst <= 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
