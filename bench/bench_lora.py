#!/usr/bin/env python3
"""LoRA against full fine-tuning of one large model on the CPU: peak memory
and step time, side by side (issue 53's "frozen weights cost nothing but
their storage").

The model is bench_checkpoint.py's chain of width x width MatMul+Relu layers
with its weights in external data, by default in nn.Linear's exported form
(each weight stored [out, in] and read through a Transpose, as
torch.onnx.export writes it). Each run trains --steps AdamW steps on
synthetic data; full fine-tuning and one LoRA run also export the model
(merged, for LoRA), whose memory then counts too. Runs are interleaved round
by round; the table
gives the median step time (steps after the first) and the largest peak RSS
over the rounds, and each run's peak against the float32 weights' bytes:

    python3 bench/bench_lora.py --ort-train build/ort_train --params 655e6 --width 4096
"""
import argparse
import json
import os
import shutil
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from bench_checkpoint import make_model  # noqa: E402
from peak_rss import measured  # noqa: E402


def step_times(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if '"step_ms"' in line]
    return [r["step_ms"] for r in rows[1:]] or [r["step_ms"] for r in rows]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ort-train", required=True)
    ap.add_argument("--params", type=float, default=100e6)
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--plain-matmul", action="store_true", help="weights stored [in, out], read by MatMul directly")
    ap.add_argument("--work", default="/tmp/ort_train_bench_lora")
    ap.add_argument("--keep", action="store_true", help="keep the generated model for the next run")
    args = ap.parse_args()
    form = "matmul" if args.plain_matmul else "linear"
    model_dir = os.path.join(args.work, f"model_{args.params:.0f}_{args.width}_{form}")
    if os.path.exists(os.path.join(model_dir, "training.yaml")):
        n = max(1, round(args.params / (args.width * args.width))) * args.width * args.width
    else:
        n = make_model(model_dir, args.params, args.width, linear=not args.plain_matmul)
    with open(os.path.join(model_dir, "training.yaml")) as f:
        base_yaml = f.read()
    lora_yaml = os.path.join(model_dir, "lora.yaml")
    with open(lora_yaml, "w") as f:
        f.write(base_yaml + f"lora: {{targets: [\"w*\"], rank: {args.rank}, alpha: {2 * args.rank}}}\n")
    weights_mib = 4 * n / 2 ** 20
    print(f"{n / 1e6:.0f}M parameters ({form} form), float32 weights {weights_mib:,.0f} MiB; "
          f"{args.steps} AdamW steps, batch 4; {args.rounds} rounds interleaved\n")
    out = os.path.join(args.work, "out.onnx")
    runs = [("full fine-tuning, fp32, --export", "training.yaml", ["--export", out]),
            (f"LoRA r{args.rank}, fp32", "lora.yaml", []),
            (f"LoRA r{args.rank}, fp32, --export (merged)", "lora.yaml", ["--export", out]),
            (f"LoRA r{args.rank}, bf16", "lora.yaml", ["--precision", "bf16"]),
            (f"LoRA r{args.rank}, bf16, --export (merged)", "lora.yaml", ["--precision", "bf16", "--export", out])]
    peaks = {label: [] for label, _, _ in runs}
    steps = {label: [] for label, _, _ in runs}
    for _ in range(args.rounds):
        for label, config, extra in runs:
            metrics = os.path.join(args.work, "m.jsonl")
            rss, _ = measured([args.ort_train, "train", "--model", os.path.join(model_dir, "model.onnx"),
                               "--config", os.path.join(model_dir, config), "--data", "synthetic", "--threads", "2",
                               "--seed", "1", "--steps", str(args.steps), "--metrics", metrics] + extra)
            peaks[label].append(rss)
            steps[label].extend(step_times(metrics))
            for name in os.listdir(args.work):
                if name.startswith("out"):
                    os.remove(os.path.join(args.work, name))
    full = statistics.median(steps[runs[0][0]])
    print("| run | peak RSS MiB | / float32 weights | step ms (median, range) | speed-up over full fine-tuning |")
    print("|---|---|---|---|---|")
    for label, _, _ in runs:
        s = steps[label]
        print(f"| {label} | {max(peaks[label]):,.0f} | {max(peaks[label]) / weights_mib:.2f} | "
              f"{statistics.median(s):.1f} ({min(s):.1f}-{max(s):.1f}) | {full / statistics.median(s):.2f}x |")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)


if __name__ == "__main__":
    main()
