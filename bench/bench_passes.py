#!/usr/bin/env python3
"""The fusion passes' effect on real exports: training-graph node counts,
forward+backward time and peak intermediate memory, with the default passes
and with the fusions (and computation_reduction) disabled, interleaved round by round.

Export the models first (hundreds of MB; never committed):

    .venv-hf/bin/python tools/export_hf_models.py --size base --opsets 14 --out /tmp/hfbase
    python3 bench/bench_passes.py --ort-train build/ort_train --models /tmp/hfbase [--rounds 3] [--repeat 3]

Each run is `ort_train train --repeat R` on one batch (batch 8, seq 128),
2 threads, on the CPU; the first losses of both configurations must agree
to 1e-5 or the script stops. Prints a Markdown table: medians over the
rounds, with the range.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

FUSIONS = ["layer_norm_fusion", "rms_norm_fusion", "gelu_fusion", "silu_fusion", "matmul_scale_fusion",
           "matmul_transpose_fusion", "matmul_add_fusion", "bias_softmax_fusion", "dropout_add_fusion",
           "bias_gelu_fusion", "attention_fusion", "computation_reduction"]
CONFIGS = {"default passes": [], "fusions disabled": sum((["--disable-pass", p] for p in FUSIONS), [])}


def run(ort_train, d, extra, repeat, threads):
    cmd = [ort_train, "train", "--model", os.path.join(d, "model.onnx"), "--config", os.path.join(d, "training.yaml"),
           "--data", os.path.join(d, "train_batches"), "--repeat", str(repeat), "--device", "cpu", "--threads",
           str(threads)] + extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    text = out.stdout + out.stderr
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{text}")
    nodes = re.search(r"training graph: (\d+) forward \+ loss nodes, (\d+) backward nodes", text)
    ms = re.search(r"forward\+backward: median ([\d.]+) ms", text)
    loss = re.search(r"loss ([\d.]+), gradient norm .*peak intermediate memory ([\d.]+) MiB", text)
    return {"forward": int(nodes[1]), "backward": int(nodes[2]), "ms": float(ms[1]), "loss": float(loss[1]),
            "peak": float(loss[2])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--models", required=True, help="folder of <model>_opset<N> exports")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    exports = sorted(e for e in os.listdir(args.models) if re.fullmatch(r"\w+_opset\d+", e))
    results = {(e, c): [] for e in exports for c in CONFIGS}
    for r in range(args.rounds):
        for e in exports:
            for c, extra in CONFIGS.items():
                res = run(args.ort_train, os.path.join(args.models, e), extra, args.repeat, args.threads)
                results[(e, c)].append(res)
                print(f"round {r + 1} {e} {c}: {res['ms']:.0f} ms", file=sys.stderr)
    print("| export | passes | forward + loss nodes | backward nodes | forward+backward ms, median (range) "
          "| peak intermediate MiB | first loss |")
    print("|---|---|---|---|---|---|---|")
    for e in exports:
        losses = [results[(e, c)][0]["loss"] for c in CONFIGS]
        if max(losses) - min(losses) > 1e-5 * max(abs(x) for x in losses):
            sys.exit(f"{e}: first losses disagree: {losses}")
        for c in CONFIGS:
            rs = results[(e, c)]
            ms = [x["ms"] for x in rs]
            print(f"| {e} | {c} | {rs[0]['forward']} | {rs[0]['backward']} | {statistics.median(ms):.0f} "
                  f"({min(ms):.0f}–{max(ms):.0f}) | {rs[0]['peak']:.0f} | {rs[0]['loss']:.5f} |")


if __name__ == "__main__":
    main()
